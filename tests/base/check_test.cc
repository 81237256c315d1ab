// TC_CHECK and TC_FAIL: a failure prints the file, the line, the condition
// and the message, then aborts; a check that holds evaluates no message.
#include "base/check.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "catch2/catch.hpp"

namespace tc {
namespace {

struct Died {
  int signal = 0;
  std::string stderr_text;
};

// Runs `fn` in a child process and reports the signal that ended it and
// what it wrote to stderr.
template <typename Fn>
Died RunInChild(Fn fn) {
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    signal(SIGABRT, SIG_DFL);  // not the test framework's report of a crash
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    fn();
    _exit(0);
  }
  close(pipe_fds[1]);
  Died died;
  char buffer[512];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) > 0;) {
    died.stderr_text.append(buffer, n);
  }
  close(pipe_fds[0]);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  if (WIFSIGNALED(status)) died.signal = WTERMSIG(status);
  return died;
}

TEST_CASE("a failed check names its file, line, condition and message, then aborts") {
  const int line = __LINE__ + 1;
  const Died died = RunInChild([] { TC_CHECK(1 + 1 == 3, "arithmetic ", 2, " is off"); });
  CHECK(died.signal == SIGABRT);
  CHECK(died.stderr_text == "tensorcut internal error at tests/base/check_test.cc:" +
                                std::to_string(line) + ": 1 + 1 == 3: arithmetic 2 is off\n");
}

TEST_CASE("TC_FAIL marks a path never taken") {
  const int line = __LINE__ + 1;
  const Died died = RunInChild([] { TC_FAIL("no kernel for dtype ", "bf16"); });
  CHECK(died.signal == SIGABRT);
  CHECK(died.stderr_text == "tensorcut internal error at tests/base/check_test.cc:" +
                                std::to_string(line) + ": no kernel for dtype bf16\n");
}

TEST_CASE("a check that holds does not evaluate its message") {
  int evaluated = 0;
  auto message = [&] {
    ++evaluated;
    return "unused";
  };
  TC_CHECK(2 > 1, message());
  CHECK(evaluated == 0);
}

}  // namespace
}  // namespace tc
