"""Every rule docs/semantics states has a test, and every rule a test names is stated: the IDs in
the documents' `**[ID]**` definitions against the IDs of the @rules(...) decorators here."""
import glob
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(HERE, "..", "..", "..", "docs", "semantics")
DEFINED = re.compile(r"\*\*\[([A-Z]+-\d+)\]\*\*")
DECORATOR = re.compile(r"@rules\(([^)]*)\)")


def stated_rules():
    ids = {}
    for path in sorted(glob.glob(os.path.join(DOCS, "*.md"))):
        with open(path) as f:
            for rule in DEFINED.findall(f.read()):
                assert rule not in ids, f"{rule} stated twice ({ids[rule]}, {path})"
                ids[rule] = os.path.basename(path)
    return ids


def rules_named_by_tests():
    ids = set()
    for path in glob.glob(os.path.join(HERE, "test_*.py")):
        with open(path) as f:
            for args in DECORATOR.findall(f.read()):
                ids.update(re.findall(r"[\"']([A-Z]+-\d+)[\"']", args))
    return ids


def test_documents_state_rules():
    ids = stated_rules()
    for doc in ("concat", "conv", "matmul_gemm", "add_mul", "relu", "pooling", "softmax", "resize",
                "reshape", "transpose"):
        assert f"{doc}.md" in ids.values(), f"docs/semantics/{doc}.md states no rule"


def test_every_stated_rule_has_a_test():
    missing = sorted(set(stated_rules()) - rules_named_by_tests())
    assert not missing, f"rules with no test: {missing}"


def test_every_tested_rule_is_stated():
    unknown = sorted(rules_named_by_tests() - set(stated_rules()))
    assert not unknown, f"tests name rules no document states: {unknown}"
