// The report folder's pieces: which names are ridge's, the destination check, the partial folder
// and the finalize step (rename, or replace ridge's own files and keep the user's).
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "ridge/errors.hpp"
#include "ridge/report.hpp"

using namespace ridge;
namespace fs = std::filesystem;

namespace {

/// An empty scratch folder of this process.
fs::path fresh_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("ridge-report-folder-" + std::to_string(::getpid())) / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

void put(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

std::string get(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

TEST(ReportFolder, RidgeOwnFilesOnly) {
  for (const char* name : {"report.md", "report.html", "results.json", "trace.json", "trace-step.json", "roofline.svg",
                           "INCOMPLETE"})
    EXPECT_TRUE(is_report_file(name)) << name;
  for (const char* name : {"notes.txt", "report.md.bak", "results.json.old", "my.json", "traces", "trace.json.txt",
                           ".svg", "report.MD", "incomplete", "data.csv", ""})
    EXPECT_FALSE(is_report_file(name)) << name;
}

TEST(ReportFolder, DestinationCheck) {
  const fs::path root = fresh_dir("check");
  EXPECT_NO_THROW(check_report_destination(root / "new", false));  // absent: fine
  fs::create_directories(root / "empty");
  EXPECT_NO_THROW(check_report_destination(root / "empty", false));  // nothing to mix
  fs::create_directories(root / "full");
  put(root / "full" / "notes.txt", "mine");
  EXPECT_THROW(check_report_destination(root / "full", false), UsageError);
  EXPECT_NO_THROW(check_report_destination(root / "full", true));
  try {
    check_report_destination(root / "full", false);
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("set force"), std::string::npos) << e.what();
  }
  put(root / "file", "x");
  EXPECT_THROW(check_report_destination(root / "file", true), UsageError);  // not a folder, even with --force
}

TEST(ReportFolder, PartialFolderBesideTheDestinationMarkedFirst) {
  const fs::path root = fresh_dir("partial");
  const fs::path partial = make_partial_report_folder(root / "out" / "");  // trailing separator
  EXPECT_EQ(partial.parent_path(), root);
  EXPECT_EQ(partial.filename().string(), "out.partial-" + std::to_string(::getpid()));
  EXPECT_NE(get(partial / "INCOMPLETE").find("incomplete"), std::string::npos);
  EXPECT_FALSE(fs::exists(root / "out"));
  // A second one (a stale folder with our PID) gets its own name.
  const fs::path second = make_partial_report_folder(root / "out");
  EXPECT_NE(second, partial);
  EXPECT_TRUE(fs::exists(second / "INCOMPLETE"));
}

TEST(ReportFolder, MarkIncompleteNamesSignalAndSections) {
  const fs::path root = fresh_dir("mark");
  const fs::path partial = make_partial_report_folder(root / "out");
  mark_report_incomplete(partial, SIGTERM, {"Roofline"}, {"Decode ceilings", "Predictions"});
  const std::string text = get(partial / "INCOMPLETE");
  EXPECT_NE(text.find("SIGTERM"), std::string::npos) << text;
  EXPECT_NE(text.find("finished (in report.md and results.json): Roofline\n"), std::string::npos) << text;
  EXPECT_NE(text.find("not run: Decode ceilings, Predictions"), std::string::npos) << text;
}

TEST(ReportFolder, FinalizeRenamesIntoAnAbsentDestination) {
  const fs::path root = fresh_dir("finalize-new");
  const fs::path partial = make_partial_report_folder(root / "out");
  put(partial / "report.md", "new");
  EXPECT_TRUE(finalize_report_folder(partial, root / "out").empty());
  EXPECT_FALSE(fs::exists(partial));
  EXPECT_EQ(get(root / "out" / "report.md"), "new");
  EXPECT_FALSE(fs::exists(root / "out" / "INCOMPLETE"));
}

TEST(ReportFolder, FinalizeReplacesOnlyRidgeFilesAndKeepsTheUsers) {
  const fs::path root = fresh_dir("finalize-force");
  const fs::path dest = root / "out";
  fs::create_directories(dest / "plots.svg");  // a folder with a ridge-like name is the user's
  put(dest / "report.md", "old");
  put(dest / "stale.svg", "old plot");
  put(dest / "trace-old.json", "old trace");
  put(dest / "notes.txt", "mine");
  const fs::path partial = make_partial_report_folder(dest);
  put(partial / "report.md", "new");
  put(partial / "roofline.svg", "new plot");
  const auto kept = finalize_report_folder(partial, dest);
  EXPECT_EQ(kept, (std::vector<std::string>{"notes.txt", "plots.svg"}));
  EXPECT_EQ(get(dest / "report.md"), "new");
  EXPECT_EQ(get(dest / "roofline.svg"), "new plot");
  EXPECT_EQ(get(dest / "notes.txt"), "mine");
  EXPECT_FALSE(fs::exists(dest / "stale.svg"));  // old and new never mix
  EXPECT_FALSE(fs::exists(dest / "trace-old.json"));
  EXPECT_FALSE(fs::exists(dest / "INCOMPLETE"));
  EXPECT_TRUE(fs::is_directory(dest / "plots.svg"));
  EXPECT_FALSE(fs::exists(partial));
}
