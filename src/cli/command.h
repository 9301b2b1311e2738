// The agent-sandbox CLI's plumbing: every subcommand lives in its own file and registers itself
// on the root CLI11 app through a RegisterXCommand(CLI::App&) function declared here. main.cc
// only calls the Register functions, parses, and runs the action of the chosen subcommand.
//
// Exit codes follow docker's convention (docker run(1), "Exit Status"): the command's own code
// is passed through; 125 means agent-sandbox itself failed (the error is printed as
// "agent-sandbox: <message>" on stderr); 124 is a timeout, as with timeout(1).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "common/error.h"

namespace asb::cli {

/// agent-sandbox itself failed (bad arguments after parsing, backend error, ...).
inline constexpr int kExitRuntimeError = 125;
/// The command ran past its --timeout (timeout(1)'s code).
inline constexpr int kExitTimeout = 124;

/// What a subcommand does once its arguments are parsed; returns the process exit code.
using Action = std::function<int()>;

/// Binds `action` to `sub`. When `sub` is the deepest subcommand given on the command line,
/// RunSelectedAction() runs it.
void SetAction(CLI::App* sub, Action action);

/// Runs the action of the deepest selected subcommand that has one. Returns its exit code, or
/// prints the help of `app` and returns 2 when no subcommand with an action was given.
int RunSelectedAction(CLI::App& app);

/// Prints "agent-sandbox: <message>" to stderr and returns kExitRuntimeError.
int ReportError(const Error& error);

// ---- subcommand registration, one per file -----------------------------------------------------

void RegisterVersionCommand(CLI::App& app);  // version.cc
void RegisterRunCommand(CLI::App& app);      // run.cc

}  // namespace asb::cli
