// What a loom_comm_t points to, shared by the files of the C API.
#pragma once

#include <memory>

#include "comm/comm.hh"

struct loom_comm_s {
    std::unique_ptr<loom::comm::communicator> impl;
};
