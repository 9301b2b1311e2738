#include "common/redact.h"

#include <gtest/gtest.h>

#include <string>

namespace asb {
namespace {

// Each case: the text, and what RedactSecrets must make of it.
struct Case {
  const char* in;
  const char* out;
};

void ExpectAll(std::initializer_list<Case> cases) {
  for (const Case& c : cases) {
    EXPECT_EQ(RedactSecrets(c.in), c.out) << "input: " << c.in;
    // Idempotent: redacted text stays as it is.
    EXPECT_EQ(RedactSecrets(c.out), c.out) << "output: " << c.out;
  }
}

// Text that must come out unchanged (the near misses of every rule).
void ExpectKept(std::initializer_list<const char*> texts) {
  for (const char* t : texts) EXPECT_EQ(RedactSecrets(t), t);
}

TEST(RedactTest, AuthorizationHeadersKeepTheScheme) {
  ExpectAll({
      {"curl -H 'Authorization: Bearer abc123' https://x",
       "curl -H 'Authorization: Bearer [REDACTED]' https://x"},
      {"curl -H \"authorization:Basic dXNlcjpwYXNz\" x",
       "curl -H \"authorization:Basic [REDACTED]\" x"},
      {"Authorization: token0only", "Authorization: [REDACTED]"},
      {"curl -H 'X-API-Key: k-123' -H 'Cookie: sid=42; a=b' u",
       "curl -H 'X-API-Key: [REDACTED]' -H 'Cookie: [REDACTED]' u"},
      {"wget --header='Proxy-Authorization: Basic Zm9vOmJhcg==' u",
       "wget --header='Proxy-Authorization: Basic [REDACTED]' u"},
      {"{\"Authorization\": \"Bearer abc\", \"x\": 1}",
       "{\"Authorization\": \"Bearer [REDACTED]\", \"x\": 1}"},
      {"Private-Token: glx", "Private-Token: [REDACTED]"},
  });
  ExpectKept({
      "curl -H 'Authorization: Bearer $TOKEN' https://x",  // a variable, not a secret
      "grep -r authorization src/",                        // no colon, no value
      "echo x-authorization-mode: strict",                 // another header name
      "cookies: 3",                                        // not the Cookie header
  });
}

TEST(RedactTest, BearerTokensAnywhere) {
  ExpectAll({
      {"http --auth-type=bearer --auth x; echo Bearer 0123456789abcdef",
       "http --auth-type=bearer --auth x; echo Bearer [REDACTED]"},
      {"BEARER a.b-c_d~e+f/g=h=", "BEARER [REDACTED]"},
  });
  ExpectKept({"the bearer of this note", "Bearer short123", "cupbearer 0123456789abcdef"});
}

TEST(RedactTest, SecretFlags) {
  ExpectAll({
      {"app --password=hunter2 --user bob", "app --password=[REDACTED] --user bob"},
      {"app --password hunter2 -v", "app --password [REDACTED] -v"},
      {"gh auth login --with-token ghx --api-key=K1 --client-secret 's p'",
       "gh auth login --with-token [REDACTED] --api-key=[REDACTED] --client-secret '[REDACTED]'"},
      {"vault --auth-token=abc", "vault --auth-token=[REDACTED]"},
      {"x --db-pass p4ss", "x --db-pass [REDACTED]"},
  });
  ExpectKept({
      "app --password-file=/run/secrets/db --token-path /x",  // where it is, not what
      "psql --no-password -c 'select 1'",                     // a switch
      "app --password -",                                     // read from stdin
      "app --password --verbose",                             // no value
      "sort --key 2 --key=3",                                 // a sort key
      "python -m tokenizer --tokens 5 --pass-through x",      // token-ish words
      "app --token $GH_TOKEN",                                // a variable
  });
}

TEST(RedactTest, ShortPasswordFlagsOfClientsThatTakeThem) {
  ExpectAll({
      {"mysql -u root -pS3cr3t! db", "mysql -u root -p[REDACTED] db"},
      {"/usr/bin/mariadb-dump -p'a b' db", "/usr/bin/mariadb-dump -p'[REDACTED]' db"},
      {"sshpass -p hunter2 ssh host", "sshpass -p [REDACTED] ssh host"},
      {"curl -u admin:hunter2 http://x", "curl -u admin:[REDACTED] http://x"},
      {"curl --user=admin:pw http://x", "curl --user=admin:[REDACTED] http://x"},
      {"openssl rsa -passin pass:topsecret -in k", "openssl rsa -passin pass:[REDACTED] -in k"},
  });
  ExpectKept({
      "mkdir -p build && ssh -p22 host",  // -p without a MySQL client or sshpass
      "mysql -p db",                      // -p alone: it prompts
      "docker run -u 1000:1000 -p 8080:80 img",
      "curl -u admin http://x",  // no password given
      "echo compass:north",
  });
}

TEST(RedactTest, SecretAssignments) {
  ExpectAll({
      {"GITHUB_TOKEN=abc make deploy", "GITHUB_TOKEN=[REDACTED] make deploy"},
      {"export OPENAI_API_KEY='sk x' AWS_SECRET_ACCESS_KEY=\"a/b+c\"",
       "export OPENAI_API_KEY='[REDACTED]' AWS_SECRET_ACCESS_KEY=\"[REDACTED]\""},
      {"PASSWORD=p1;DB_PASS=p2&&PGPASSWORD=p3|x",
       "PASSWORD=[REDACTED];DB_PASS=[REDACTED]&&"
       "PGPASSWORD=[REDACTED]|x"},
      {"curl 'https://x/cb?access_token=abc&state=1'",
       "curl 'https://x/cb?access_token=[REDACTED]&state=1'"},
      {"java -Dspring.datasource.password=pw -jar a",
       "java -Dspring.datasource.password=[REDACTED] -jar a"},
      {"echo '{\"client_secret\": \"xyz\", \"n\": 2}'",
       "echo '{\"client_secret\": \"[REDACTED]\", \"n\": 2}'"},
      {"echo 'password: hunter2' >> cfg", "echo 'password: [REDACTED]' >> cfg"},
      {"SIGNING_KEY=abc", "SIGNING_KEY=[REDACTED]"},
      {"NPM_CONFIG__AUTH=dXNlcg== npm i", "NPM_CONFIG__AUTH=[REDACTED] npm i"},
      {"my-secret=v", "my-secret=[REDACTED]"},
  });
  ExpectKept({
      "TOKENIZERS_PARALLELISM=false KEYBOARD=us MONKEY=1 PWD=/workspace python3 a.py",
      "PASSWORD_FILE=/run/x SECRET_NAME=db TOKEN_URL=https://x API_KEY_ID=7 make",
      "GITHUB_TOKEN=$(cat /run/t) TOKEN=${T} X=\"$PASSWORD\" make",
      "KEY=value sort --key=2",  // a lone "key" is not a secret
      "[ \"$a\" == b ] && token==x", "curl https://x/tokens=4",
      "echo token:abc",  // a colon inside a word
      "TOKEN= make",     // empty
  });
}

TEST(RedactTest, UrlCredentials) {
  ExpectAll({
      {"git clone https://user:p%40ss@github.com/o/r.git",
       "git clone https://user:[REDACTED]@github.com/o/r.git"},
      {"psql postgres://app:p@ss@db:5432/x", "psql postgres://app:[REDACTED]@db:5432/x"},
      {"DATABASE_URL=mysql://u:pw@h/db", "DATABASE_URL=mysql://u:[REDACTED]@h/db"},
  });
  ExpectKept({
      "git clone ssh://git@github.com:22/o/r.git",  // a user, no password
      "curl http://localhost:8080/a:b@c",           // '@' after the authority
      "open https://example.com/?q=a:b",
  });
}

TEST(RedactTest, WellKnownTokenShapes) {
  ExpectAll({
      {"git push https://ghp_0123456789abcdefghijABCDEFGHIJ012345@github.com/o/r",
       "git push https://ghp_[REDACTED]@github.com/o/r"},
      {"echo github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
       "echo github_pat_[REDACTED]"},
      {"echo gho_0123456789abcdefghij0123456789ab ghs_0123456789abcdefghij0123456789ab",
       "echo gho_[REDACTED] ghs_[REDACTED]"},
      {"aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE",
       "aws configure set aws_access_key_id AKIA[REDACTED]"},
      {"echo sk-proj-abc123DEF456ghi789JKL0", "echo sk-[REDACTED]"},
      {"echo sk_live_0123456789abcdefABCD", "echo sk_live_[REDACTED]"},
      {"curl -d token=xoxb-1234-5678-abcdefghij slack", "curl -d token=[REDACTED] slack"},
      {"echo xoxp-1234567890-abcdef", "echo xoxp-[REDACTED]"},
      {"echo glpat-abcdefghij0123456789", "echo glpat-[REDACTED]"},
      {"echo npm_0123456789abcdefghij0123456789abcdef", "echo npm_[REDACTED]"},
      {"echo hf_0123456789abcdefghij0123456789ab", "echo hf_[REDACTED]"},
      {"echo AIzaSyA0123456789abcdefghij0123456789_x", "echo AIza[REDACTED]"},
      {"echo asb_0123456789abcdef0123456789abcdef0123456789abcdef ok", "echo asb_[REDACTED] ok"},
      {"curl http://h/p/asbp_"
       "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/",
       "curl http://h/p/asbp_[REDACTED]/"},
  });
  ExpectKept({
      "echo ghp_short gho_0123",                                 // too short
      "AKIAIOSFODNN7EXAMPLEX AKIA0123",                          // too long / too short
      "pip install sk-learn sk-video-processing-tools-library",  // no digit
      "echo task-abcdefghijklmnop0123456789",                    // "sk-" inside a word
      "echo asb_1a2b3c4d key_0123456789abcdef",                  // key prefixes and ids are public
      "echo asb_0123456789abcdef0123456789abcdef0123456789abcdef0",  // 49 hex: not a key
      "echo asbp_0123456789abcdef pv_0123456789abcdef",  // too short; preview ids are public
      "echo xox-1234567890 xoxb-12",
  });
}

TEST(RedactTest, Jwts) {
  ExpectAll({
      {"curl -H 'X: "
       "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U' u",
       "curl -H 'X: [REDACTED]' u"},
      {"t=eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", "t=[REDACTED]"},
  });
  ExpectKept({"echo eyJhbGciOiJIUzI1NiJ9", "echo eyJabc.eyJdef.ghi", "keyJson.x.y"});
}

TEST(RedactTest, PrivateKeyBlocks) {
  ExpectAll({
      {"printf '-----BEGIN RSA PRIVATE KEY-----\\nMIIEow\\n-----END RSA PRIVATE KEY-----' > k",
       "printf '-----BEGIN RSA PRIVATE KEY-----[REDACTED]-----END RSA PRIVATE KEY-----' > k"},
      {"-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----\n",
       "-----BEGIN OPENSSH PRIVATE KEY-----[REDACTED]-----END OPENSSH PRIVATE KEY-----\n"},
      // Cut before its END line: everything after the header goes.
      {"echo '-----BEGIN PRIVATE KEY-----\nMIIEv", "echo '-----BEGIN PRIVATE KEY-----[REDACTED]"},
  });
  ExpectKept({
      "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
      "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
      "-----BEGIN ",
  });
}

TEST(RedactTest, OrdinaryTextIsKeptByteForByte) {
  ExpectKept({
      "",
      "ls -la /workspace",
      "python3 -c 'print(6 * 7)'",
      "echo hunter2",
      "make -j4 && ./a.out --verbose --output=x.txt",
      "caf\xc3\xa9 \x01\xff",
      "request_id=req_1 key_id=key_0123456789abcdef sandbox_id=sb_0123456789abcdef",
      "POST /v1/sandboxes/{id}/exec 200 12ms",
  });
}

TEST(RedactTest, SeveralSecretsInOneLine) {
  EXPECT_EQ(RedactSecrets("A_TOKEN=x curl -u u:p -H 'Authorization: Bearer t' "
                          "https://u:p@h/?api_key=k"),
            "A_TOKEN=[REDACTED] curl -u u:[REDACTED] -H 'Authorization: Bearer [REDACTED]' "
            "https://u:[REDACTED]@h/?api_key=[REDACTED]");
}

TEST(RedactTest, LargeTextStaysLinear) {
  std::string big;
  for (int i = 0; i < 20000; ++i) big += "TOKEN=abc eyJ ghp_ -----BEGIN x:// ";
  std::string out = RedactSecrets(big);
  EXPECT_EQ(out.find("abc"), std::string::npos);
  EXPECT_NE(out.find("TOKEN=[REDACTED]"), std::string::npos);
}

}  // namespace
}  // namespace asb
