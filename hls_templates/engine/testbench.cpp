// C-simulation testbench (Vitis HLS csim_design, or g++): replays golden vectors made by the reference
// backend (python -m partitioner.engine.golden --bin golden/) and compares the whole activation region.
#include <stdio.h>
#include <string.h>

#include <fstream>
#include <string>
#include <vector>

#include "engine.h"

static std::vector<uint8_t> slurp(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

static std::vector<word_t> words(const std::vector<uint8_t> &bytes) {
    std::vector<word_t> out((bytes.size() + 63) / 64, word_t(0));
    for (size_t i = 0; i < bytes.size(); ++i) out[i / 64].range(8 * (i % 64) + 7, 8 * (i % 64)) = bytes[i];
    return out;
}

static const volatile uint64_t no_clock = 0;   // no clock here: cycles are the engine's step count

int main(int argc, char **argv) {
    std::string dir = argc > 1 ? argv[1] : "golden";
    std::ifstream list(dir + "/cases.txt");
    std::string name;
    int cases = 0, failures = 0;
    while (list >> name) {
        std::vector<uint8_t> expected = slurp(dir + "/" + name + ".act_out.bin");
        std::vector<word_t> consts = words(slurp(dir + "/" + name + ".const.bin"));
        std::vector<word_t> act = words(slurp(dir + "/" + name + ".act_in.bin"));
        std::ifstream programs(dir + "/" + name + ".programs.txt");
        unsigned long long addr = 0, layers = 0, cycles = 0, total = 0;
        while (programs >> addr >> layers) {
            uint64_t c = 0;
            engine(&consts[addr / 64], (uint32_t)layers, act.data(), consts.data(), &c, &no_clock);
            if (c == ENGINE_ERROR) {
                printf("%-24s does not fit this engine's buffers\n", name.c_str());
                break;
            }
            total += c;
        }
        size_t wrong = 0;
        for (size_t i = 0; i < expected.size(); ++i)
            if ((uint8_t)act[i / 64].range(8 * (i % 64) + 7, 8 * (i % 64)).to_uint() != expected[i]) ++wrong;
        ++cases;
        if (wrong) ++failures;
        printf("%-24s %s (%zu bytes differ, %llu cycles)\n", name.c_str(), wrong ? "FAIL" : "ok", wrong, total);
        (void)cycles;
    }
    printf("%d passed, %d failed\n", cases - failures, failures);
    return failures != 0 || cases == 0;
}
