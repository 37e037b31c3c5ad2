// Steps that would hang on a regression run in a forked child that SIGALRM ends, so that a hang
// fails its test case instead of stopping the suite.
#pragma once
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

namespace dg::test {

// Runs `body` in a forked child that SIGALRM kills after `seconds`; returns its exit status, or
// 128 + the signal that ended it (so a hang shows as 128 + SIGALRM).
inline int in_child(const std::function<int()>& body, unsigned seconds = 20) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    alarm(seconds);
    _exit(body());
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// "child exit 142 (hung: killed by the alarm)" for CHECK_MESSAGE.
inline std::string hang_note(int rc) { return rc == 128 + SIGALRM ? " (hung: killed by the alarm)" : ""; }

}  // namespace dg::test
