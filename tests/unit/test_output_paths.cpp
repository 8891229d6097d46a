// The one writer (write_text) on every kind of output path, and the JSON readers on hostile
// input: depth, wrong types, bad samples, file names that are not UTF-8.
#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "ridge/errors.hpp"
#include "ridge/result.hpp"
#include "ridge/writers.hpp"

using namespace ridge;
namespace fs = std::filesystem;

namespace {

// A scratch folder per test, removed afterwards.
struct Scratch {
  fs::path dir;
  explicit Scratch(const std::string& name) {
    dir = fs::temp_directory_path() / fmt_name(name);
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  static std::string fmt_name(const std::string& name) { return "ridge_test_" + name + "_" + std::to_string(::getpid()); }
  std::string path(const std::string& name) const { return (dir / name).string(); }
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

mode_t lstat_type(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & S_IFMT;
}

mode_t stat_type(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & S_IFMT;
}

std::size_t entries(const fs::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("not a UsageError: ") + e.what();
  }
  return "no error";
}

const char* result_file_head = R"({"schema": "ridge.results", "schema_version": 1, "context": {}, "records": )";

}  // namespace

TEST(OutputPaths, RegularFileIsReplacedAtomicallyKeepingItsMode) {
  Scratch s("replace");
  const auto file = s.path("out.json");
  write_text(file, "old");
  ::chmod(file.c_str(), 0640);
  struct stat before {};
  ::stat(file.c_str(), &before);
  write_text(file, "new");
  struct stat after {};
  ::stat(file.c_str(), &after);
  EXPECT_EQ(slurp(file), "new");
  EXPECT_NE(before.st_ino, after.st_ino) << "replaced by rename, not rewritten in place";
  EXPECT_EQ(after.st_mode & 07777, 0640u);
  EXPECT_EQ(entries(s.dir), 1u) << "no temporary file left beside it";
  EXPECT_EQ(resolve_output(file).kind, OutputKind::replace_atomically);
}

TEST(OutputPaths, MissingFoldersAreCreated) {
  Scratch s("create");
  write_text(s.path("a/b/c.csv"), "x");
  EXPECT_EQ(slurp(s.path("a/b/c.csv")), "x");
}

TEST(OutputPaths, SymlinkIsFollowedAndStays) {
  Scratch s("symlink");
  fs::create_directories(s.dir / "real");
  write_text(s.path("real/target.json"), "old");
  fs::create_symlink("real/target.json", s.dir / "link.json");  // relative to the link's folder
  write_text(s.path("link.json"), "new");
  EXPECT_EQ(lstat_type(s.dir / "link.json"), S_IFLNK) << "the link stays a link";
  EXPECT_EQ(slurp(s.dir / "real/target.json"), "new") << "the target gets the content";
  EXPECT_EQ(entries(s.dir), 2u);
  EXPECT_EQ(entries(s.dir / "real"), 1u);
  // A dangling link creates its target.
  fs::create_symlink(s.dir / "real/later.json", s.dir / "dangling.json");
  write_text(s.path("dangling.json"), "made");
  EXPECT_EQ(lstat_type(s.dir / "dangling.json"), S_IFLNK);
  EXPECT_EQ(slurp(s.dir / "real/later.json"), "made");
  // A loop is a usage error, not a hang.
  fs::create_symlink("loop_b", s.dir / "loop_a");
  fs::create_symlink("loop_a", s.dir / "loop_b");
  EXPECT_NE(message_of([&] { write_text(s.path("loop_a"), "x"); }).find("symbolic links"), std::string::npos);
}

TEST(OutputPaths, FifoIsWrittenInPlace) {
  Scratch s("fifo");
  const auto fifo = s.dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(resolve_output(fifo.string()).kind, OutputKind::in_place);
  std::string received;
  std::thread reader([&] { received = slurp(fifo); });
  write_text(fifo.string(), "through the pipe");
  reader.join();
  EXPECT_EQ(received, "through the pipe");
  EXPECT_EQ(lstat_type(fifo), S_IFIFO) << "the FIFO was not replaced by a regular file";
}

TEST(OutputPaths, CharacterDeviceBehindSymlinkStaysADevice) {
  // Safe as root: nothing is written unless the writer first says it will write in place.
  ASSERT_EQ(stat_type("/dev/null"), S_IFCHR);
  Scratch s("chardev");
  const auto link = s.dir / "null.json";
  fs::create_symlink("/dev/null", link);
  ASSERT_EQ(resolve_output(link.string()).kind, OutputKind::in_place);
  ASSERT_EQ(resolve_output("/dev/null").kind, OutputKind::in_place);
  write_text(link.string(), "discarded");
  EXPECT_EQ(lstat_type(link), S_IFLNK);
  EXPECT_EQ(stat_type("/dev/null"), S_IFCHR);
  EXPECT_EQ(entries(s.dir), 1u);
}

TEST(OutputPaths, FolderIsAUsageErrorNamingIt) {
  Scratch s("folder");
  const std::string m = message_of([&] { write_text(s.dir.string(), "x"); });
  EXPECT_NE(m.find(s.dir.string() + " is a folder"), std::string::npos) << m;
  const std::string slash = message_of([&] { write_text(s.path("not_yet/"), "x"); });
  EXPECT_NE(slash.find("names a folder"), std::string::npos) << slash;
  EXPECT_FALSE(fs::exists(s.dir / "not_yet"));
  EXPECT_NE(message_of([] { resolve_output(""); }).find("empty"), std::string::npos);
}

TEST(OutputPaths, DashIsStdout) {
  EXPECT_EQ(resolve_output("-").kind, OutputKind::standard_output);
  testing::internal::CaptureStdout();
  write_text("-", "to stdout\n");
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "to stdout\n");
}

TEST(OutputPaths, NonUtf8FileNamesWork) {
  Scratch s("utf8");
  const std::string name = s.path("r\xff\xfe.json");
  ResultSet set;
  const char* argv[] = {"ridge", "compare", name.c_str()};
  set.context = make_context(3, argv);  // argv holding invalid UTF-8 must not break the JSON writer
  Record r;
  r.name = "x\xff";
  r.samples_ms = {1.0, 1.1};
  finalize(r);
  set.records.push_back(r);
  write_json(name, to_json(set));
  ASSERT_TRUE(fs::exists(name));
  const ResultSet back = load_result_file(name);
  ASSERT_EQ(back.records.size(), 1u);
  EXPECT_EQ(back.records[0].name, "x\xef\xbf\xbd") << "the invalid byte is replaced by U+FFFD";
}

TEST(JsonReader, DepthIsBoundedBeforeAnythingRecurses) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string m = message_of([&] { parse_json(deep, "deep.json"); });
  EXPECT_NE(m.find("deep.json: JSON nested deeper than 512 levels"), std::string::npos) << m;
  const std::string ok = std::string(max_json_depth, '[') + std::string(max_json_depth, ']');
  EXPECT_NO_THROW(parse_json(ok, "ok.json"));
  const std::string one_more = "{\"a\":" + ok + "}";
  EXPECT_THROW(parse_json(one_more, "x"), UsageError);
  EXPECT_NE(message_of([] { parse_json("{\"a\": ", "cut.json"); }).find("cut.json is not valid JSON: it ends too early"),
            std::string::npos);
  // A file that is not JSON at all: where it stops, in the reader's terms, not the parser's.
  const std::string readme = message_of([] { parse_json("# ridge\n\nMeasure", "README.md"); });
  EXPECT_NE(readme.find("README.md is not valid JSON: it stops being JSON at line 1, column 1 (at \"# ridge??Measure\")"),
            std::string::npos)
      << readme;
  EXPECT_EQ(readme.find("json.exception"), std::string::npos) << readme;
}

TEST(JsonReader, WrongContentNamesFileAndJsonPath) {
  Scratch s("content");
  const auto write_records = [&](const std::string& name, const std::string& records) {
    write_text(s.path(name), std::string(result_file_head) + records + "}");
    return s.path(name);
  };
  const std::string good = R"({"name": "a", "samples_ms": [1.0, 1.2]})";
  struct Case {
    std::string records, expected;
  };
  const Case cases[] = {
      {"[" + good + R"(, {"name": "b", "samples_ms": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, -1]}])",
       "records[1].samples_ms[7]: expected a positive finite number, got -1"},
      {R"([{"name": "a", "samples_ms": [0]}])", "records[0].samples_ms[0]: expected a positive finite number, got 0"},
      {R"([{"name": "a", "samples_ms": [1, null]}])", "records[0].samples_ms[1]: expected a positive finite number, got null"},
      {R"([{"name": "a", "samples_ms": [1e999]}])", "is not valid JSON: a number is too large for a double"},
      {R"([{"name": "a", "samples_ms": ["1.0"]}])", "records[0].samples_ms[0]: expected a positive finite number, got \"1.0\""},
      {R"([{"name": "a", "samples_ms": []}])", "records[0].samples_ms: no samples"},
      {R"([{"name": "a"}])", "records[0].samples_ms: missing"},
      {R"([{"name": 7, "samples_ms": [1]}])", "records[0].name: expected a string, got 7"},
      {R"([{"samples_ms": [1]}])", "records[0].name: missing"},
      {R"([{"name": "a", "samples_ms": [1], "params": [1]}])", "records[0].params: expected an object"},
      {R"([{"name": "a", "samples_ms": [1], "bytes": -5}])", "records[0].bytes: expected a finite number >= 0, got -5"},
      {R"([{"name": "a", "samples_ms": [1], "repeats_per_sample": 0}])", "records[0].repeats_per_sample: expected a positive integer, got 0"},
      {R"([{"name": "a", "samples_ms": [1], "warnings": ["ok", 3]}])", "records[0].warnings[1]: expected a string, got 3"},
      {R"([{"name": "a", "samples_ms": [1], "clocks_start": {"sm_mhz": "fast"}}])", "records[0].clocks_start.sm_mhz: expected a finite number"},
      {R"([{"name": "a", "samples_ms": [1], "l2_flushed": "yes"}])", "records[0].l2_flushed: expected true or false"},
      {R"({"name": "a"})", "records: expected an array of records"},
      {"[3]", "records[0]: expected an object, got 3"},
  };
  int i = 0;
  for (const auto& c : cases) {
    const auto file = write_records("case" + std::to_string(i++) + ".json", c.records);
    const std::string m = message_of([&] { load_result_file(file); });
    EXPECT_EQ(m.rfind(file + (c.expected.rfind("is not", 0) == 0 ? " " : ": "), 0), 0u) << "names the file: " << m;
    EXPECT_NE(m.find(c.expected), std::string::npos) << "expected '" << c.expected << "' in: " << m;
  }
  write_text(s.path("ctx.json"), R"({"schema": "ridge.results", "schema_version": 1, "context": {"argv": "ridge"}, "records": []})");
  EXPECT_NE(message_of([&] { load_result_file(s.path("ctx.json")); }).find("context.argv: expected an array of strings"),
            std::string::npos);
  write_text(s.path("dev.json"), R"({"schema": "ridge.results", "schema_version": 1, "context": {"device": {"sm_count": -1}}, "records": []})");
  EXPECT_NE(message_of([&] { load_result_file(s.path("dev.json")); }).find("context.device.sm_count: expected an integer"),
            std::string::npos);
  write_text(s.path("ver.json"), R"({"schema": "ridge.results", "schema_version": "1", "context": {}, "records": []})");
  EXPECT_NE(message_of([&] { load_result_file(s.path("ver.json")); }).find("schema_version: expected an integer"),
            std::string::npos);
}

TEST(JsonReader, ReadingAFolderOrFifoIsHandled) {
  Scratch s("readkinds");
  EXPECT_NE(message_of([&] { read_text(s.dir / "sub"); }).find("cannot read"), std::string::npos);
  fs::create_directories(s.dir / "sub");
  EXPECT_NE(message_of([&] { read_text(s.dir / "sub"); }).find("is a folder"), std::string::npos);
}

TEST(JsonReader, ChecksWithoutATimeMayCarryZero) {
  // ridge stores decode.check_logits with method "none" and a sample of 0: its own files must read.
  Scratch s("checkrecord");
  write_text(s.path("check.json"), std::string(result_file_head) +
                                       R"([{"name": "decode.check_logits", "method": "none", "samples_ms": [0.0]}]})");
  EXPECT_EQ(load_result_file(s.path("check.json")).records.size(), 1u);
  write_text(s.path("neg.json"), std::string(result_file_head) +
                                     R"([{"name": "decode.check_logits", "method": "none", "samples_ms": [-1]}]})");
  EXPECT_NE(message_of([&] { load_result_file(s.path("neg.json")); }).find("expected a finite number >= 0, got -1"),
            std::string::npos);
}

