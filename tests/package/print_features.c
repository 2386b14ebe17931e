// SPDX-License-Identifier: Apache-2.0
// Prints loom_build_features() of libloom.so, the text every tool's --version must repeat.
#include <loom/loom.h>
#include <stdio.h>

int main(void) {
    printf("%s\n", loom_build_features());
    return 0;
}
