// Private to core/: where sandboxd's wire types (protocol/) become core's own (sandbox_types.h,
// event_stream.h). Every service that talks to sandboxd converts its answers here, so the layers
// above never see a protocol type (ADR 0018).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "core/event_stream.h"
#include "core/sandbox_types.h"
#include "protocol/client.h"
#include "protocol/messages.h"
#include "protocol/proc_messages.h"

namespace asb::core::wire {

ExecResult FromWire(const protocol::ExecResult& r);
ExecOutcome FromWire(protocol::CollectedExec c);
FileStat FromWire(const protocol::FileStat& s);
TarResult FromWire(const protocol::TarResult& t);
ProcessInfo FromWire(const protocol::ProcInfo& p);

/// Converts each element of a vector.
template <typename T>
auto FromWire(const std::vector<T>& v) -> std::vector<decltype(FromWire(v.front()))> {
  std::vector<decltype(FromWire(v.front()))> out;
  out.reserve(v.size());
  for (const auto& x : v) out.push_back(FromWire(x));
  return out;
}

/// A Result of a wire value as a Result of core's value; errors pass unchanged.
template <typename T>
auto FromWire(Result<T> r) -> Result<decltype(FromWire(std::move(*r)))> {
  if (!r) return Fail(std::move(r).error());
  return FromWire(std::move(*r));
}

/// What the INFO and RESULT payloads of a channel hold, which decides how they are decoded.
enum class Payloads {
  kExec,       // RESULT: ExecResult
  kProcess,    // INFO: ProcInfo or {"skipped":N}; RESULT: ProcInfo
  kFileRead,   // INFO: FileStat; RESULT: nothing of use
  kFileWrite,  // RESULT: FileStat
};

/// The channel as an EventStream. `on_exec_result` (kExec only) completes a decoded result
/// before it is handed out (the host-side figures: oom_killed, pids_limited).
std::shared_ptr<EventStream> WrapChannel(std::shared_ptr<protocol::Channel> channel,
                                         Payloads payloads,
                                         std::function<void(ExecResult*)> on_exec_result = {});

}  // namespace asb::core::wire

namespace asb::core::wire {

/// Opens a tar.export channel of the sandbox directory `path` (DATA: the tar; RESULT: done),
/// resolved in `scope` (default: beneath /workspace, as the sandbox user).
Result<std::shared_ptr<protocol::Channel>> OpenTarExport(protocol::Connection& conn,
                                                         const std::string& path,
                                                         const protocol::FileScope& scope = {});
/// Opens a tar.import channel into `path`, emptied first with `clear_first`; `max_bytes` caps
/// the extracted bytes (0 = none). The caller writes the tar, CloseWrite()s, and reads RESULT.
Result<std::shared_ptr<protocol::Channel>> OpenTarImport(protocol::Connection& conn,
                                                         const std::string& path, bool clear_first,
                                                         uint64_t max_bytes,
                                                         const protocol::FileScope& scope = {});

}  // namespace asb::core::wire
