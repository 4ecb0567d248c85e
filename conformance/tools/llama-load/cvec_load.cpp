// Loads one control-vector GGUF with llama.cpp's own loader (common_control_vector_load
// of common/common.cpp, which is not part of libllama) and prints what it returned.
//
//     cvec_load FILE
//
// Prints `n_embd N` (-1: refused) and, when loaded, `layers L` (the number of
// layers the returned data covers, from layer 1). Exit status: 0 loaded, 1
// refused (n_embd -1), 2 usage. An abort or a segfault kills the process with a
// signal. llama.cpp's own log lines (why it refused) go to stderr.
//
// Build: see README.md of this folder (links llama-common from the pinned llama.cpp).

#include "common.h"

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char ** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s FILE\n", argv[0]);
        return 2;
    }
    std::vector<common_control_vector_load_info> infos;
    common_control_vector_load_info info;
    info.strength = 1.0f;
    info.fname = argv[1];
    infos.push_back(info);

    const common_control_vector_data out = common_control_vector_load(infos);
    std::printf("n_embd %d\n", out.n_embd);
    if (out.n_embd == -1) {
        return 1;
    }
    std::printf("layers %zu\n", out.n_embd > 0 ? out.data.size() / static_cast<size_t>(out.n_embd) : 0);
    return 0;
}
