// libFuzzer harness: model bytes -> load, validate, plan. Any input must give a Session or an
// error Status; a crash, a sanitizer report, a leak or a hang is a bug.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "onyx/session.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto session = onyx::Session::CreateFromBytes(bytes, onyx::fuzz::FuzzSessionOptions());
  if (!session.ok()) return 0;
  // A model with symbolic input dims is planned at its first run; plan it here for the declared
  // shapes (symbolic dims = 1) so the planner sees every model that loads.
  (void)session->DescribePlan({}, /*json=*/true);
  return 0;
}
