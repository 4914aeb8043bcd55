// `onyx check`: the optimised kernels against the reference kernels, step by step.
#pragma once

namespace onyx::cli {

extern const char* const kCheckHelp;
// Returns the process exit code: 0 when every step is within its bound, 1 when one is not or on
// an error, 2 on bad arguments.
int CheckMain(int argc, char** argv);

}  // namespace onyx::cli
