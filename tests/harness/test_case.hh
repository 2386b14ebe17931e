// A table of cases over one body: LOOM_CASE(name, statement) is a CMocka entry named `name`
// that runs `statement`, so cases that differ only in an argument are rows of the suite's
// table, each still its own case in the TAP output.
#pragma once

#include "test_main.hh"

#define LOOM_CASE(name, ...) \
    CMUnitTest { #name, [](void**) { __VA_ARGS__; }, nullptr, nullptr, nullptr }
