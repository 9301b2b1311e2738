#include "isolation/ns/state.h"

#include <boost/json.hpp>
#include <sstream>

#include "isolation/ns/files.h"

namespace asb::isolation::ns {

namespace json = boost::json;

std::string EncodeSandboxState(const SandboxState& s) {
  json::object o;
  o["id"] = s.id;
  o["pid"] = s.pid;
  o["start_time"] = s.start_time;
  o["slot"] = s.slot;
  o["uid_base"] = s.uid_base;
  o["loop_device"] = s.loop_device;
  o["cgroup_mode"] = s.cgroup_mode;
  json::array cg;
  for (const auto& c : s.cgroups) cg.emplace_back(c);
  o["cgroups"] = std::move(cg);
  o["created_unix_ms"] = s.created_unix_ms;
  o["canonical_ids"] = s.canonical_ids;
  return json::serialize(o);
}

Result<SandboxState> DecodeSandboxState(std::string_view text) {
  try {
    json::object o = json::parse(text).as_object();
    SandboxState s;
    s.id = json::value_to<std::string>(o.at("id"));
    s.pid = json::value_to<int>(o.at("pid"));
    s.start_time = json::value_to<uint64_t>(o.at("start_time"));
    s.slot = json::value_to<uint32_t>(o.at("slot"));
    s.uid_base = json::value_to<uint32_t>(o.at("uid_base"));
    s.loop_device = json::value_to<std::string>(o.at("loop_device"));
    s.cgroup_mode = json::value_to<std::string>(o.at("cgroup_mode"));
    if (const auto* cg = o.if_contains("cgroups")) {
      s.cgroups = json::value_to<std::vector<std::string>>(*cg);
    }
    s.created_unix_ms = json::value_to<int64_t>(o.at("created_unix_ms"));
    if (const auto* c = o.if_contains("canonical_ids")) s.canonical_ids = c->as_bool();
    return s;
  } catch (const std::exception& e) {
    return Fail(Error::Backend(std::string("malformed state.json: ") + e.what()));
  }
}

Result<uint64_t> ProcessStartTime(int pid) {
  auto stat = ReadSmallFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return Fail(Error::NotFound("process " + std::to_string(pid) + " is gone"));
  // The command name (field 2) may contain spaces and ')': fields restart after the last ')'.
  auto close = stat->rfind(')');
  if (close == std::string::npos) return Fail(Error::Internal("malformed /proc/pid/stat"));
  std::istringstream in(stat->substr(close + 2));
  std::string field;
  // Field 3 is the first after ')'; start time is field 22.
  for (int i = 3; i < 22; ++i) in >> field;
  uint64_t start = 0;
  if (!(in >> start)) return Fail(Error::Internal("malformed /proc/pid/stat"));
  return start;
}

bool ProcessIsRunning(int pid) {
  auto stat = ReadSmallFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  auto close = stat->rfind(')');
  if (close == std::string::npos || close + 2 >= stat->size()) return false;
  char state = (*stat)[close + 2];
  return state != 'Z' && state != 'X';
}

}  // namespace asb::isolation::ns
