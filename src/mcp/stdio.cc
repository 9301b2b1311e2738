// stdio transport; see stdio.h.
#include "mcp/stdio.h"

#include <string>

#include "mcp/session.h"

namespace asb::mcp {

int ServeStdio(Tools tools, std::FILE* in, std::FILE* out) {
  McpSession session(std::move(tools), [out](const std::string& text) {
    // Serialized JSON never contains a raw newline, so one message is one line.
    std::fwrite(text.data(), 1, text.size(), out);
    std::fputc('\n', out);
    std::fflush(out);
  });
  std::string line;
  // getc reads through stdio's buffer but hands over what a pipe has delivered, so a message
  // is handled as soon as its newline arrives.
  int c;
  while ((c = std::getc(in)) != EOF) {
    if (c != '\n') {
      line.push_back(static_cast<char>(c));
      continue;
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) session.HandleText(line);
    line.clear();
  }
  if (!line.empty()) session.HandleText(line);
  session.CancelAll();
  return 0;
}

}  // namespace asb::mcp
