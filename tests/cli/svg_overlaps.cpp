// svg_overlaps FILE_OR_FOLDER...: counts the overlapping text boxes (two texts, or a text over a
// data marker) in each SVG, by ridge::svg_boxes, the estimate ridge's plot layout uses. Prints one
// line per file ("N<TAB>path") and the total; exits 1 when any pair overlaps, 2 on a usage error.
// Folders are searched for *.svg recursively.
#include <algorithm>
#include <cstdio>
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
  for (int i = 1; i < argc; ++i) {
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
  for (const auto& f : files) {
    const auto boxes = ridge::svg_boxes(ridge::read_text(f));
    const auto pairs = ridge::overlapping_boxes(boxes);
    total += pairs.size();
    std::printf("%zu\t%s\n", pairs.size(), f.c_str());
    for (std::size_t i = 0; i < pairs.size() && i < 3; ++i)
      std::printf("\t[%s] over [%s]\n", boxes[pairs[i].first].marker ? "marker" : boxes[pairs[i].first].text.c_str(),
                  boxes[pairs[i].second].marker ? "marker" : boxes[pairs[i].second].text.c_str());
  }
  std::printf("%zu\ttotal overlapping pairs in %zu SVG file(s)\n", total, files.size());
  return total == 0 ? 0 : 1;
}
