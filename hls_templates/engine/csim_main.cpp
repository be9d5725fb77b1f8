// C entry point for the `csim` backend: the HLS engine on byte arrays through ctypes.
#include <string.h>
#include <vector>

#include "engine.h"

namespace {
void to_words(const uint8_t *bytes, uint64_t n, std::vector<word_t> &words) {
    words.assign((n + 63) / 64, word_t(0));
    for (uint64_t w = 0; w < words.size(); ++w)
        for (int k = 0; k < 8; ++k) {
            uint64_t chunk = 0;
            uint64_t at = w * 64 + k * 8;
            if (at < n) memcpy(&chunk, bytes + at, (n - at) >= 8 ? 8 : (size_t)(n - at));
            words[w].range(64 * k + 63, 64 * k) = chunk;
        }
}

void from_words(const std::vector<word_t> &words, uint8_t *bytes, uint64_t n) {
    for (uint64_t w = 0; w < words.size(); ++w)
        for (int k = 0; k < 8; ++k) {
            uint64_t at = w * 64 + k * 8;
            if (at >= n) return;
            uint64_t chunk = words[w].range(64 * k + 63, 64 * k).to_uint64();
            memcpy(bytes + at, &chunk, (n - at) >= 8 ? 8 : (size_t)(n - at));
        }
}
const volatile uint64_t no_clock = 0;     // C-simulation has no clock: cycles are the step count
}  // namespace

extern "C" int engine_csim(const uint8_t *consts, uint64_t const_bytes, uint8_t *act, uint64_t act_bytes,
                           uint64_t program_addr, uint32_t layers, uint64_t *cycles) {
    if (program_addr % 64 != 0) return -1;
    std::vector<word_t> c, a;
    to_words(consts, const_bytes, c);
    to_words(act, act_bytes, a);
    engine(&c[program_addr / 64], layers, a.data(), c.data(), cycles, &no_clock);
    if (*cycles == ENGINE_ERROR) return -2;
    from_words(a, act, act_bytes);
    return 0;
}

extern "C" int engine_abi_version(void) { return ENGINE_ABI_VERSION; }
