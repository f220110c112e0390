// kiln conformance [DIR]: runs the ONNX backend tests of a folder: node, simple and pytorch-*
// tests (model.onnx + test_data_set_N/) and model tests (data.json; the light models are run on
// the inputs ONNX's runner feeds them). Each test runs in a forked child, so a crash or hang in
// one kernel is reported as that test's failure, not the runner's death.
#include <kiln/session.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "commands.h"
#include "progress.h"
#include "testdata/model_dir.h"
#include "testdata/model_test.h"

namespace kiln::cli {

namespace fs = std::filesystem;

namespace {

struct Outcome {
  std::string status;  // pass / fail / skip
  std::string reason;
};

// "" when the outputs match the expected ones, else what differs.
std::string mismatch(const std::vector<Tensor>& outs, const std::vector<Tensor>& expected, double rtol, double atol) {
  if (outs.size() < expected.size())
    return "model gives " + std::to_string(outs.size()) + " outputs, test expects " + std::to_string(expected.size());
  for (size_t k = 0; k < expected.size(); ++k) {
    auto c = testdata::compare(outs[k], expected[k], rtol, atol);
    if (!c.ok) return "output " + std::to_string(k) + ": " + c.problem;
  }
  return "";
}

Outcome run_one(const fs::path& dir, double rtol, double atol) {
  std::unique_ptr<Session> s;
  try {
    if (auto mt = testdata::read_model_test(dir)) {
      // A model test names its model by url; only the light models are stored locally.
      if (!mt->light_model) return {"skip", "model test '" + mt->model_name + "' downloads its model (" + mt->url + ")"};
      s = Session::create(mt->light_model->string());
      std::vector<Tensor> outs = s->run(testdata::ramp_inputs(s->inputs()));
      std::string problem = mismatch(outs, testdata::load_light_outputs(*mt->light_model), mt->rtol, mt->atol);
      if (!problem.empty()) return {"fail", problem};
    } else {
      s = Session::create((dir / "model.onnx").string());
      for (const fs::path& set : testdata::find_data_sets(dir)) {
        testdata::DataSet ds = testdata::load_data_set(set, s->inputs(), s->outputs());
        std::string problem = mismatch(s->run(ds.inputs), ds.outputs, rtol, atol);
        if (!problem.empty()) return {"fail", problem};
      }
    }
    // Every passing test also proves its memory plan sound.
    std::string problem = s->verify_plans();
    if (!problem.empty()) return {"fail", "memory plan checker: " + problem};
  } catch (const UnsupportedError& e) {
    return {"skip", e.what()};
  } catch (const std::exception& e) {
    return {"fail", e.what()};
  }
  return {"pass", ""};
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\t', ' ');
  return s;
}

// Runs the test in a child process with a time limit.
Outcome run_isolated(const fs::path& dir, double rtol, double atol, int timeout_s) {
  int fds[2];
  if (pipe(fds) != 0) return run_one(dir, rtol, atol);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    Outcome o = run_one(dir, rtol, atol);
    std::string msg = o.status + "\t" + one_line(o.reason);
    ssize_t off = 0;
    while (off < static_cast<ssize_t>(msg.size())) {
      ssize_t w = write(fds[1], msg.data() + off, msg.size() - off);
      if (w <= 0) break;
      off += w;
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string msg;
  char buf[4096];
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool timed_out = false;
  for (;;) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
    if (left <= 0) { timed_out = true; break; }
    pollfd p{fds[0], POLLIN, 0};
    int r = poll(&p, 1, left);
    if (r <= 0) { if (r == 0) timed_out = true; break; }
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    msg.append(buf, n);
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (timed_out) return {"fail", "timed out after " + std::to_string(timeout_s) + " s"};
  if (WIFSIGNALED(status)) return {"fail", "crashed with signal " + std::to_string(WTERMSIG(status))};
  auto tab = msg.find('\t');
  if (tab == std::string::npos) return {"fail", "test process ended without a result"};
  return {msg.substr(0, tab), msg.substr(tab + 1)};
}

std::set<std::string> read_list(const fs::path& p) {
  std::set<std::string> out;
  std::ifstream f(p);
  if (!f) throw Error("cannot read '" + p.string() + "'");
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    out.insert(line);
  }
  return out;
}

}  // namespace

void add_conformance_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("conformance", "Run the ONNX backend tests (node, simple, pytorch-*, real/light) and report pass/fail/skip");
  struct Args {
    std::string dir = "/usr/share/libonnx-testdata/data/node";
    std::string tsv, expect, write_expect;
    std::vector<std::string> filters;
    double rtol = 1e-3, atol = 1e-7;
    int timeout = 60;
    bool verbose = false;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("dir", args->dir, "Folder of test folders (each model.onnx + test_data_set_N/, or a model test's data.json)")->capture_default_str();
  cmd->add_option("--tsv", args->tsv, "Write test<TAB>status<TAB>reason per test to this file");
  cmd->add_option("-f,--filter", args->filters, "Only tests whose name contains this (repeatable)");
  cmd->add_option("--expect", args->expect, "File of tests that must pass; exit 1 if any does not");
  cmd->add_option("--write-expect", args->write_expect, "Add every passing test to this file (the ratchet list)");
  cmd->add_option("--rtol", args->rtol, "Relative tolerance")->capture_default_str();
  cmd->add_option("--atol", args->atol, "Absolute tolerance")->capture_default_str();
  cmd->add_option("--timeout", args->timeout, "Seconds per test")->capture_default_str();
  cmd->add_flag("-v,--verbose", args->verbose, "Also print skipped tests and their reasons");
  cmd->callback([args, &exit_code] {
    std::vector<fs::path> tests;
    for (const auto& e : fs::directory_iterator(args->dir)) {
      if (!fs::exists(e.path() / "model.onnx") && !fs::exists(e.path() / "data.json")) continue;
      std::string name = e.path().filename().string();
      bool keep = args->filters.empty();
      for (const std::string& f : args->filters) keep = keep || name.find(f) != std::string::npos;
      if (keep) tests.push_back(e.path());
    }
    std::sort(tests.begin(), tests.end());
    std::ofstream tsv;
    if (!args->tsv.empty()) {
      tsv.open(args->tsv);
      if (!tsv) throw Error("cannot write '" + args->tsv + "'");
    }
    int passed = 0, failed = 0, skipped = 0;
    std::set<std::string> passing;
    std::map<std::string, std::string> not_passing;
    Progress progress("conformance");
    size_t done = 0;
    for (const fs::path& t : tests) {
      std::string name = t.filename().string();
      progress.update(done++, tests.size(), name);
      Outcome o = run_isolated(t, args->rtol, args->atol, args->timeout);
      if (o.status != "pass") progress.clear();
      if (o.status == "pass") {
        ++passed;
        passing.insert(name);
      } else {
        not_passing[name] = o.status + ": " + o.reason;
        if (o.status == "skip") {
          ++skipped;
          if (args->verbose) std::cout << "SKIP " << name << ": " << o.reason << "\n";
        } else {
          ++failed;
          std::cout << "FAIL " << name << ": " << o.reason << "\n";
        }
      }
      if (tsv) tsv << name << "\t" << o.status << "\t" << o.reason << "\n";
    }
    progress.clear();
    int regressions = 0;
    if (!args->expect.empty()) {
      for (const std::string& name : read_list(args->expect)) {
        if (passing.count(name)) continue;
        bool selected = std::any_of(tests.begin(), tests.end(), [&](const fs::path& p) { return p.filename() == name; });
        if (!selected) continue;
        ++regressions;
        std::cout << "REGRESSION " << name << " is on the expected-pass list but did not pass ("
                  << not_passing[name] << ")\n";
      }
    }
    if (!args->write_expect.empty()) {
      std::set<std::string> all = passing;
      if (fs::exists(args->write_expect)) {
        auto old = read_list(args->write_expect);
        all.insert(old.begin(), old.end());
      }
      std::ofstream f(args->write_expect);
      f << "# ONNX node tests kiln must keep passing (kiln conformance --expect). Only ever grows.\n";
      for (const std::string& n : all) f << n << "\n";
    }
    std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
    if (!args->expect.empty()) exit_code = regressions ? 1 : 0;
    else exit_code = failed ? 1 : 0;
  });
}

}  // namespace kiln::cli
