// SPDX-License-Identifier: Apache-2.0
// What every part of loom-ctld's API v1 shares: JSON replies and one-line refusals, the
// checks in front of every path (rate, then token), the 405 for methods a path does not
// allow, and reading a member id from a path. api.cc (members, status, metrics) and
// api_fabric.cc (fabric, routes, trees) install their paths with these.
#pragma once

#include <httplib.h>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace loom::ctld {

class controller;

using json    = nlohmann::json;
using handler = std::function<void(const httplib::Request&, httplib::Response&)>;

/// Answers `body` as JSON with `http_status`. Bytes that are not UTF-8 (a path echoed in a
/// refusal) are replaced (U+FFFD), since JSON cannot carry them and nlohmann would throw.
void reply(httplib::Response& res, int http_status, const json& body);
/// A refusal: one line that says why; counted by the error handler with all the others.
void refuse(httplib::Response& res, int http_status, const std::string& reason);
/// The body as a JSON object, or false with a refusal (400) saying what is wrong with it.
bool parse_object(const httplib::Request& req, httplib::Response& res, json* out);
/// The member id of the path (its first match); false when it does not fit in 64 bits.
bool path_id(const httplib::Request& req, uint64_t* id);
/// A lease renewal's request (a member's heartbeat, a job's allocation renewal): the path's
/// id and the body's "lease" string. False with a refusal: 404 naming `what` for a bad id,
/// 400 for a body without a lease of at most 128 bytes (`granted_by`: what returned it).
bool lease_request(const httplib::Request& req, httplib::Response& res, const char* what,
                   const char* granted_by, uint64_t* id, std::string* lease);

/// The checks in front of every path: the rate (429) and then the token (401), so a client
/// guessing tokens is slowed down too. False: refused, `res` says why. They run once the
/// body is read (within --max-body): a refusal before it would leave the body on the
/// connection, where it would be read as the next request.
bool admitted(controller& ctl, const httplib::Request& req, httplib::Response& res);
/// `serve` behind admitted().
handler guarded(controller& ctl, handler serve);
/// Every method `allowed` ("GET, POST") does not name gets 405 with Allow, after the checks.
void allow_only(httplib::Server& server, controller& ctl, const std::string& pattern,
                const std::string& allowed);

}  // namespace loom::ctld
