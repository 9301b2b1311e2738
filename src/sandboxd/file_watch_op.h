// file.watch: reports changes under a directory as they happen (docs/design/sandbox-protocol.md
// section 7, "file.watch"), with inotify(7).
//
// One inotify instance per operation. Without `recursive` only the directory itself is watched
// (changes of its direct entries); with it, every directory below as well, and each directory
// created or moved in later is added when its event arrives, then scanned so that entries made
// inside it before its watch existed are still reported (as creates; one may be reported twice;
// a directory moved in from outside reports all it holds as creates).
// A directory moved within the tree keeps its watch (the kernel hands back the same watch
// descriptor) and its paths are rewritten; one moved out of the tree loses its watches.
//
// Events go out as NDJSON lines on stdout, as fast as the host's stdout window allows. While it
// is closed they wait in a queue of `max_queue` events and at most 1 MiB; beyond that newer ones
// are dropped and counted in one "overflow" event, so a slow reader costs bounded memory and
// learns what it missed. Repeated writes (or chmods) of one path in a row are reported once.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>

#include "common/unique_fd.h"
#include "protocol/messages.h"
#include "sandboxd/operation.h"

namespace asb::sandboxd {

class FileWatchOp final : public Operation {
 public:
  FileWatchOp(Daemon& d, Connection& c, uint32_t ch, protocol::FileWatchRequest req);
  ~FileWatchOp() override;

  /// Arms the watch and sends INFO FileWatchArmed, or ends with ERROR: invalid_request (not a
  /// directory, max_queue over protocol::kWatchQueueMax, path rules), not_found,
  /// limit_exceeded (over kWatchMaxOps watches in this sandbox, over kWatchMaxDirs
  /// directories, or the kernel's inotify limits).
  void Start() override;
  void OnWindow(protocol::Stream s, uint32_t bytes) override;
  void OnCancel() override;
  void Abandon() override;

 private:
  struct Dir {
    std::string display;    // absolute path in the sandbox
    bool moved_in = false;  // re-added by a move within the tree; its IN_MOVE_SELF is expected
  };

  /// Watches `display` and, when recursive, the directories below it (breadth first). With
  /// `report`, every entry found is reported as a create (a directory that is new to the
  /// watch). Errors only for the first directory; later failures become an overflow event.
  /// `top_path` (if not empty) is how to resolve the first directory instead of `display`.
  Status AddTree(const std::string& display, bool report, const std::string& top_path = "");
  /// Adds one watch of the directory `path` resolves to, reported as `display`; returns its
  /// descriptor and the opened directory. Errors: those of openat2/inotify_add_watch.
  Result<int> AddWatch(const std::string& path, const std::string& display, UniqueFd* dir_fd);
  void OnReadable();
  /// One inotify event; `cookie` pairs the two halves of a rename.
  void Handle(int wd, uint32_t mask, uint32_t cookie, const std::string& name);
  /// Forgets `wd` and every watched directory below it (kernel watches removed too).
  void DropSubtree(int wd);
  void Push(protocol::FileWatchEvent ev);
  void Pump();
  // With req_.entries: sets a create, write or chmod event's entry (a stat as it leaves).
  void AddEntry(protocol::FileWatchEvent* ev);
  /// Stops reading; the queue is still delivered, then RESULT FileWatchEnd{reason}.
  void EndWith(std::string reason);
  void Release();

  protocol::FileWatchRequest req_;
  uint32_t max_queue_ = protocol::kWatchQueueDefault;
  UniqueFd inotify_;
  int root_wd_ = -1;
  std::unordered_map<int, Dir> dirs_;
  bool dirs_capped_ = false;  // an overflow was reported for a directory beyond kWatchMaxDirs
  std::deque<protocol::FileWatchEvent> queue_;
  uint64_t queued_bytes_ = 0;  // kWatchEventCost + path size of each queued event
  std::string pending_;        // encoded lines not yet sent
  uint64_t window_ = protocol::kInitialWindow;
  std::string end_reason_;
  bool counted_ = false;
  /// The rename of a file.write's temporary file seen last (IN_MOVED_FROM): its cookie, and
  /// whether it replaces an existing file. Its IN_MOVED_TO is reported as the write it is.
  uint32_t write_cookie_ = 0;
  bool write_replaces_ = false;

  static uint32_t active_;  // running file.watch operations of this sandboxd
};

}  // namespace asb::sandboxd
