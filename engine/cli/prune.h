// `onyx prune`: retraining-free pruning of a model's weights, with a per-layer report and the
// accuracy drop (labelled inputs) or the output deviation (random inputs) it causes.
#pragma once

namespace onyx::cli {

extern const char* const kPruneHelp;
int PruneMain(int argc, char** argv);

}  // namespace onyx::cli
