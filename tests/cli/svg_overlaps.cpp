// svg_overlaps [--known FILE] FILE_OR_FOLDER...: counts the overlapping text boxes (two texts, or a
// text over a data marker) in each SVG, by ridge::svg_boxes, the estimate ridge's plot layout uses.
// Prints one line per file ("N<TAB>path") and the total; exits 1 when a file has more pairs than
// allowed, 2 on a usage error. Allowed: 0, or for a path ending as a line "N<TAB>PATH" of the
// --known file says, N (SVGs committed before the layout that have no stored data to draw them
// again from). Folders are searched for *.svg recursively.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <filesystem>
#include <string>
#include <vector>

#include "ridge/plot.hpp"
#include "ridge/writers.hpp"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: svg_overlaps FILE_OR_FOLDER... (prints overlapping label pairs per SVG)\n");
    return 2;
  }
  std::vector<fs::path> files;
  std::map<std::string, std::size_t> known;  // path suffix -> pairs allowed
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--known" && i + 1 < argc) {
      std::ifstream in(argv[++i]);
      if (!in) {
        std::fprintf(stderr, "svg_overlaps: cannot read %s\n", argv[i]);
        return 2;
      }
      std::size_t n = 0;
      std::string path;
      while (in >> n >> path) known[path] = n;
      continue;
    }
    const fs::path p = argv[i];
    if (fs::is_directory(p)) {
      for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file() && e.path().extension() == ".svg") files.push_back(e.path());
    } else if (fs::is_regular_file(p)) {
      files.push_back(p);
    } else {
      std::fprintf(stderr, "svg_overlaps: %s: no such file or folder\n", argv[i]);
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  std::size_t total = 0;
  bool over = false;
  for (const auto& f : files) {
    const auto boxes = ridge::svg_boxes(ridge::read_text(f));
    const auto pairs = ridge::overlapping_boxes(boxes);
    total += pairs.size();
    std::size_t allowed = 0;
    for (const auto& [suffix, n] : known)
      if (f.string().ends_with(suffix)) allowed = n;
    over = over || pairs.size() > allowed;
    std::printf("%zu\t%s%s\n", pairs.size(), f.c_str(),
                pairs.size() > allowed ? " (too many)" : allowed > 0 ? " (known: committed before the layout)" : "");
    for (std::size_t i = 0; i < pairs.size() && i < 3; ++i)
      std::printf("\t[%s] over [%s]\n", boxes[pairs[i].first].marker ? "marker" : boxes[pairs[i].first].text.c_str(),
                  boxes[pairs[i].second].marker ? "marker" : boxes[pairs[i].second].text.c_str());
  }
  std::printf("%zu\ttotal overlapping pairs in %zu SVG file(s)\n", total, files.size());
  return over ? 1 : 0;
}
