#include "forward_params.hh"

namespace loom::drivers::forward::params {

constinit const loom::params::int_param chunk{
    "LOOM_FWD_CHUNK", "65536", "bytes",
    "largest chunk fwd:<driver> cuts a message into (forwarded cut-through, chunk by chunk)"};
constinit const loom::params::int_param buffers{
    "LOOM_FWD_BUFFERS", "64", "chunks",
    "chunk buffers a fwd:<driver> rank forwards through, split evenly (at least 2 each) over its "
    "output channels (port and dateline VC); a chunk whose channel has none free waits, its "
    "payload in the inner driver (back-pressure)"};
constinit const loom::params::int_param max_ops{
    "LOOM_FWD_MAX_OPS", "4096", "operations",
    "operations and chunks in flight through a fwd:<driver> rank; when chunks run out, arriving "
    "headers wait (back-pressure) and new operations get LOOM_ERR_NO_RESOURCE"};

const loom::params::component component{"forward", {&chunk, &buffers, &max_ops}};

}  // namespace loom::drivers::forward::params
