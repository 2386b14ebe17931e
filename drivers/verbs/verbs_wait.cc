// SPDX-License-Identifier: Apache-2.0
// The verbs endpoint's waker (drivers/waker.hh): the HCA is the doorbell. Arming requests a
// completion event for the next work completion (ibv_req_notify_cq); a caller with nothing
// to do then sleeps in poll(2) on the completion channel's descriptor. Completions queued
// before the request raise no event, which is why the caller polls once more after arming
// (waker.hh's order): nothing that came before is missed.
//
// Work handed over inside the process (ring) comes through an eventfd polled beside the
// channel: arming empties it and a ring writes it.
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "drivers/verbs/verbs.hh"

namespace loom::drivers::verbs {

waker verbs_endpoint::idle_waker() {
    if (channel_ == nullptr || cq_ == nullptr) {
        return {};
    }
    if (bell_fd_ < 0) {
        bell_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    }
    return waker_of(this);
}

uint64_t verbs_endpoint::arm_sleep() {
    if (bell_fd_ >= 0) {
        uint64_t v = 0;
        (void)!::read(bell_fd_, &v, sizeof v);
    }
    api_.req_notify_cq(cq_, 0);
    return 0;
}

void verbs_endpoint::sleep(uint64_t token, int64_t timeout_ns) {
    (void)token;  // the channel and the eventfd keep a signal until it is read
    if (timeout_ns <= 0) {
        return;
    }
    pollfd fds[2] = {{channel_->fd, POLLIN, 0}, {bell_fd_, POLLIN, 0}};
    timespec ts{time_t(timeout_ns / 1'000'000'000), long(timeout_ns % 1'000'000'000)};
    if (::ppoll(fds, bell_fd_ >= 0 ? 2 : 1, &ts, nullptr) <= 0) {
        return;
    }
    if ((fds[0].revents & POLLIN) != 0) {
        ibv_cq* cq = nullptr;
        void* ctx  = nullptr;
        while (api_.get_cq_event(channel_, &cq, &ctx) == 0) {
            api_.ack_cq_events(cq, 1);  // before destroy_cq, every event must be acknowledged
        }
    }
}

void verbs_endpoint::ring() {
    if (bell_fd_ >= 0) {
        uint64_t one = 1;
        (void)!::write(bell_fd_, &one, sizeof one);
    }
}

}  // namespace loom::drivers::verbs
