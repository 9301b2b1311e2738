#include "templates/dockerfile.h"

#include <gtest/gtest.h>

namespace asb::templates {
namespace {

using Kind = DockerStep::Kind;

Dockerfile MustParse(std::string_view text) {
  auto r = ParseDockerfile(text);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message());
  return r ? *r : Dockerfile{};
}

std::string ErrorOf(std::string_view text) {
  auto r = ParseDockerfile(text);
  EXPECT_FALSE(r.has_value());
  return r ? "" : r.error().message();
}

TEST(DockerfileTest, EverySupportedInstruction) {
  auto d = MustParse(
      "# a comment\n"
      "FROM base\n"
      "ENV A=1 B=\"two words\"\n"
      "ENV LEGACY value with spaces\n"
      "RUN echo $A > /f\n"
      "RUN [\"/bin/echo\", \"exec form\"]\n"
      "COPY a.txt b.txt /dst/\n"
      "ADD root.tar /\n"
      "WORKDIR /w\n"
      "WORKDIR sub\n"
      "USER sandbox:sandbox\n"
      "LABEL template.displayName=\"My tools\" template.tools=\"jq,curl\"\n");
  EXPECT_EQ(d.from, "base");
  EXPECT_EQ(d.from_line, 2);
  ASSERT_EQ(d.steps.size(), 10u);
  EXPECT_EQ(d.steps[0].kind, Kind::kEnv);
  EXPECT_EQ(d.steps[0].pairs,
            (std::vector<std::pair<std::string, std::string>>{{"A", "1"}, {"B", "two words"}}));
  EXPECT_EQ(d.steps[1].pairs[0].second, "value with spaces");
  EXPECT_EQ(d.steps[2].kind, Kind::kRun);
  EXPECT_EQ(d.steps[2].line, 5);
  // RUN is not expanded by the parser: the shell sees $A in its environment.
  EXPECT_EQ(d.steps[2].args, (std::vector<std::string>{"/bin/sh", "-c", "echo $A > /f"}));
  EXPECT_EQ(d.steps[3].args, (std::vector<std::string>{"/bin/echo", "exec form"}));
  EXPECT_EQ(d.steps[4].kind, Kind::kCopy);
  EXPECT_EQ(d.steps[4].args, (std::vector<std::string>{"a.txt", "b.txt"}));
  EXPECT_EQ(d.steps[4].dest, "/dst/");
  EXPECT_EQ(d.steps[5].kind, Kind::kAdd);
  EXPECT_EQ(d.steps[6].value, "/w");
  EXPECT_EQ(d.steps[7].value, "/w/sub");
  EXPECT_EQ(d.steps[8].value, "sandbox:sandbox");
  EXPECT_EQ(d.steps[9].pairs[0],
            (std::pair<std::string, std::string>{"template.displayName", "My tools"}));
  EXPECT_EQ(d.steps[9].pairs[1].second, "jq,curl");
}

TEST(DockerfileTest, ContinuationsCommentsAndCase) {
  // The seed's LABEL, with continuations; a comment line inside a continuation is dropped.
  auto d = MustParse(
      "from base\n"
      "\n"
      "LABEL template.name=\"data-science\" \\\n"
      "      template.displayName=\"Data Science & Rust\" \\\n"
      "# dropped\n"
      "      template.tools=\"ruby,rustc,cargo,psql\"\n"
      "run echo a \\  \n"
      "    && echo b\n");
  ASSERT_EQ(d.steps.size(), 2u);
  EXPECT_EQ(d.steps[0].line, 3);
  ASSERT_EQ(d.steps[0].pairs.size(), 3u);
  EXPECT_EQ(d.steps[0].pairs[1].second, "Data Science & Rust");
  EXPECT_EQ(d.steps[0].pairs[2].second, "ruby,rustc,cargo,psql");
  EXPECT_EQ(d.steps[1].args[2], "echo a     && echo b");
}

TEST(DockerfileTest, EscapeDirective) {
  auto d = MustParse(
      "# escape=`\n"
      "FROM base\n"
      "RUN echo c:\\dir `\n"
      "  more\n");
  ASSERT_EQ(d.steps.size(), 1u);
  EXPECT_EQ(d.steps[0].args[2], "echo c:\\dir   more");
  // A directive after a comment is only a comment: the backslash stays the escape.
  auto e = MustParse("# hello\n# escape=`\nFROM base\nRUN a \\\n b\n");
  EXPECT_EQ(e.steps[0].args[2], "a  b");
  EXPECT_NE(ErrorOf("# escape=x\nFROM base\n").find("escape must be"), std::string::npos);
}

TEST(DockerfileTest, VariablesArgsAndWorkdir) {
  auto d = MustParse(
      "ARG BASE=base\n"
      "FROM ${BASE}\n"
      "ARG BASE\n"
      "ARG V=1.2\n"
      "ENV DIR=/opt/app HOME_${V}=x\n"
      "ENV E=${UNSET:-dflt} F=${DIR:+set} G='$DIR' H=\\$DIR\n"
      "WORKDIR $DIR/../srv/./x\n"
      "COPY --chown=sandbox src ${DIR}/\n");
  EXPECT_EQ(d.from, "base");
  ASSERT_EQ(d.steps.size(), 6u);
  EXPECT_EQ(d.steps[0].kind, Kind::kArg);
  EXPECT_EQ(d.steps[1].kind, Kind::kArg);
  EXPECT_EQ(d.steps[1].pairs[0].second, "1.2");
  EXPECT_EQ(d.steps[2].pairs[1].first, "HOME_1.2");
  const auto& e = d.steps[3].pairs;
  EXPECT_EQ(e[0].second, "dflt");
  EXPECT_EQ(e[1].second, "set");
  EXPECT_EQ(e[2].second, "$DIR");
  EXPECT_EQ(e[3].second, "$DIR");
  EXPECT_EQ(d.steps[4].value, "/opt/srv/x");
  EXPECT_EQ(d.steps[5].chown, "sandbox");
  EXPECT_EQ(d.steps[5].dest, "/opt/app/");
}

TEST(DockerfileTest, UnsupportedInstructionsNameThemselvesAndTheirLine) {
  for (const char* instr : {"CMD", "ENTRYPOINT", "EXPOSE", "VOLUME", "HEALTHCHECK", "SHELL",
                            "STOPSIGNAL", "ONBUILD", "MAINTAINER"}) {
    std::string text = std::string("FROM base\nRUN true\n") + instr + " x\n";
    std::string err = ErrorOf(text);
    EXPECT_NE(err.find(std::string("line 3: ") + instr + " is not supported"), std::string::npos)
        << err;
  }
  // Lower case is still the instruction.
  EXPECT_NE(ErrorOf("FROM base\ncmd [\"x\"]\n").find("line 2: CMD is not supported"),
            std::string::npos);
  EXPECT_NE(ErrorOf("FROM base\nFROBNICATE x\n").find("line 2: unknown instruction 'FROBNICATE'"),
            std::string::npos);
}

TEST(DockerfileTest, MultiStageAndRemoteAndFlagsAreErrors) {
  EXPECT_NE(ErrorOf("FROM base AS build\n").find("line 1: FROM ... AS"), std::string::npos);
  EXPECT_NE(ErrorOf("FROM base\nFROM base\n").find("line 2: a second FROM"), std::string::npos);
  EXPECT_NE(ErrorOf("FROM base\nCOPY --from=x a b\n").find("multi-stage"), std::string::npos);
  EXPECT_NE(ErrorOf("FROM base\nADD https://x/y /y\n").find("remote sources"), std::string::npos);
  EXPECT_NE(ErrorOf("FROM base\nCOPY *.txt /\n").find("wildcards"), std::string::npos);
  EXPECT_NE(ErrorOf("FROM base\nCOPY --chmod=644 a /a\n").find("--chmod is not supported"),
            std::string::npos);
  EXPECT_NE(ErrorOf("FROM base\nRUN --mount=type=cache,target=/x true\n")
                .find("RUN --mount is not supported"),
            std::string::npos);
  EXPECT_NE(ErrorOf("FROM base\nRUN cat <<EOF\nhello\nEOF\n").find("heredocs"), std::string::npos);
  EXPECT_NE(ErrorOf("FROM debian:bookworm\n").find("name one of our templates"), std::string::npos);
  EXPECT_NE(ErrorOf("FROM base\nCOPY a b c\n").find("ending in '/'"), std::string::npos);
  EXPECT_NE(ErrorOf("FROM base\nCOPY a\n").find("source and a destination"), std::string::npos);
}

TEST(DockerfileTest, StructuralErrors) {
  EXPECT_NE(ErrorOf("").find("no FROM"), std::string::npos);
  EXPECT_NE(ErrorOf("# only a comment\n").find("no FROM"), std::string::npos);
  EXPECT_NE(ErrorOf("RUN true\nFROM base\n").find("line 1: RUN before FROM"), std::string::npos);
  EXPECT_NE(ErrorOf("FROM base\nENV A=\"open\n").find("line 2: unterminated"), std::string::npos);
  EXPECT_NE(ErrorOf("FROM base\nENV A=${B\n").find("line 2:"), std::string::npos);
  EXPECT_NE(ErrorOf("FROM base\nENV A=${B?unset}\n").find("B: unset"), std::string::npos);
  EXPECT_NE(ErrorOf("FROM base\nENV A\n").find("needs a value"), std::string::npos);
  EXPECT_NE(ErrorOf("FROM base\nUSER\n").find("USER needs"), std::string::npos);
  EXPECT_NE(ErrorOf("FROM base\nRUN\n").find("RUN needs a command"), std::string::npos);
  EXPECT_NE(ErrorOf(std::string("FROM base\nRUN a\0b\n", 17)).find("NUL"), std::string::npos);
}

TEST(DockerfileTest, TextThatIsNotUtf8IsAnErrorNamingItsLine) {
  // LABEL and ENV values end up in the template's JSON manifest.
  EXPECT_NE(ErrorOf("FROM base\nLABEL template.displayName=\"a \xff\xfe\"\n")
                .find("line 2: not valid UTF-8"),
            std::string::npos);
  EXPECT_NE(ErrorOf("FROM base\nRUN true\nENV X=\xc3\n").find("line 3:"), std::string::npos);
  auto df = MustParse("FROM base\nLABEL template.displayName=\"caf\xc3\xa9 \xf0\x9f\x98\x80\"\n");
  ASSERT_EQ(df.steps.size(), 1u);
}

TEST(DockerfileTest, SizeLimitAtTheBoundary) {
  std::string text = "FROM base\nRUN true\n";
  std::string at = text + std::string(kMaxDockerfileBytes - text.size(), '#');
  // One long comment line brings the file to exactly the limit: accepted.
  at.insert(text.size(), "\n");
  at.pop_back();
  ASSERT_EQ(at.size(), kMaxDockerfileBytes);
  EXPECT_TRUE(ParseDockerfile(at).has_value());
  EXPECT_NE(ErrorOf(at + "#").find("larger than"), std::string::npos);
}

TEST(DockerfileTest, ExpandWordQuoting) {
  std::vector<std::pair<std::string, std::string>> vars = {{"X", "1"}, {"X", "2"}, {"E", ""}};
  EXPECT_EQ(*ExpandWord("$X-${X}", vars), "2-2");
  EXPECT_EQ(*ExpandWord("\"a \\\"q\\\" $X\\n\"", vars), "a \"q\" 2\\n");
  EXPECT_EQ(*ExpandWord("${E:-d}|${E-d}|${E:+p}|${E+p}", vars), "d|||p");
  EXPECT_EQ(*ExpandWord("$ $1 ${X}", vars), "$ $1 2");
  EXPECT_EQ(*ExpandWord("`$X", vars, '`'), "$X");
  EXPECT_FALSE(ExpandWord("${X%%.*}", vars).has_value());
}

}  // namespace
}  // namespace asb::templates
