// Snapshot records (ADR 0008): one row per workspace snapshot, in the `snapshots` table of
// agent-sandbox.db (migration in schema.cc). The archive itself lives in
// <data_dir>/snapshots/<id>.tar.zst; the record is written "pending" before the file is
// made and "ready" after its rename, so that recovery can delete what a crash left half-made
// (ADR 0008).
//
// Free functions over Store (Store::db() under Store::lock()), so that store.h stays as it is.
// Timestamps are Unix epoch milliseconds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "store/store.h"

namespace asb::store {

/// One row of `snapshots`. `state` is "pending" or "ready" (CHECK constraint).
struct SnapshotRecord {
  std::string id;          // "snap_" + 16 hex
  std::string owner;       // the owner of the sandbox it was taken from (opaque)
  std::string sandbox_id;  // the sandbox it was taken from ("" for an upload)
  std::string name;        // caller's label, may be ""
  std::string template_name;
  std::string spec_json = "{}";  // the sandbox's spec at snapshot time (core's JSON), for fork
  std::string state;             // "pending" | "ready"
  int64_t size_bytes = 0;        // bytes of the tar.zst file
  int64_t content_bytes = 0;     // sum of regular file sizes in the archive
  int64_t created_at_ms = 0;
};

/// Which snapshot records to list (ordered by created_at, then id).
struct SnapshotFilter {
  std::optional<std::string> owner{};       // nullopt: every owner
  std::optional<std::string> sandbox_id{};  // nullopt: every sandbox
  std::optional<std::string> state{};       // nullopt: every state
};

/// Inserts a record. Errors: kConflict (id exists, bad state).
Status InsertSnapshot(Store& store, const SnapshotRecord& r);
/// The record `id`. Errors: kNotFound.
Result<SnapshotRecord> GetSnapshot(Store& store, std::string_view id);
Result<std::vector<SnapshotRecord>> ListSnapshots(Store& store, const SnapshotFilter& filter);
/// Marks a pending record ready with its sizes. Errors: kNotFound.
Status MarkSnapshotReady(Store& store, std::string_view id, int64_t size_bytes,
                         int64_t content_bytes);
/// Deletes the record (idempotent: a missing id is success).
Status DeleteSnapshot(Store& store, std::string_view id);

}  // namespace asb::store
