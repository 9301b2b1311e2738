// `agent-sandbox exec -t [-i] ID -- CMD`: an interactive terminal into a
// server sandbox, as `docker exec -it`. CMD starts as a background process on a PTY (POST
// .../processes, pty) and this terminal talks to it over the process's WebSocket (.../ws,
// api/proc_ws.h): with -i our stdin goes to it (the local terminal in raw mode, so Ctrl-C is
// a byte for the sandbox's line discipline, not a signal for us), its output comes to our
// stdout, our window size is sent at start and on SIGWINCH, SIGINT/SIGTERM/SIGHUP/SIGQUIT that
// reach us are forwarded to it, and its exit code is ours. The terminal's settings are restored
// on every way out.
#pragma once

#include <boost/json.hpp>
#include <string>

#include "common/result.h"

namespace asb::cli {

struct TtyExec {
  std::string id;
  boost::json::object start;  // the POST .../processes body (argv, env, workdir, user, ...)
  bool interactive = false;   // -i: forward stdin
};

/// Runs it; returns its exit code (128+N when signal N killed it). Errors: the server's, or
/// the connection's (kBackend).
Result<int> RunTtyExec(const TtyExec& t);

}  // namespace asb::cli
