// One JSON value as the SAX parser delivered it, kept as a flat list of tokens in buffers that are
// reused from one trace event to the next. Reading a million-event trace this way allocates
// nothing per event; a DOM (nlohmann::json) is built only for an event the fast path cannot read,
// so that its error message is the one the DOM reader gives (src/trace/model/chrome_json.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ridge::detail {

class EventTokens {
 public:
  enum class Kind : std::uint8_t { null, boolean, integer, unsigned_integer, floating, string, key, open_object,
                                   close_object, open_array, close_array };
  struct Token {
    Kind kind;
    bool boolean = false;
    std::int64_t integer = 0;  // also an unsigned integer's bits
    double floating = 0;
    std::size_t text_begin = 0, text_size = 0;  // a string's or key's bytes in text()
  };

  void clear() {
    tokens_.clear();
    text_.clear();
  }
  void null() { tokens_.push_back({Kind::null}); }
  void boolean(bool v) { tokens_.push_back({Kind::boolean, v}); }
  void integer(std::int64_t v) { tokens_.push_back({Kind::integer, false, v}); }
  void unsigned_integer(std::uint64_t v) {
    tokens_.push_back({Kind::unsigned_integer, false, static_cast<std::int64_t>(v)});
  }
  void floating(double v) { tokens_.push_back({Kind::floating, false, 0, v}); }
  void string(std::string_view v) { push_text(Kind::string, v); }
  void key(std::string_view v) { push_text(Kind::key, v); }
  void open(bool object) { tokens_.push_back({object ? Kind::open_object : Kind::open_array}); }
  void close(bool object) { tokens_.push_back({object ? Kind::close_object : Kind::close_array}); }

  const std::vector<Token>& tokens() const { return tokens_; }
  std::string_view text(const Token& t) const { return std::string_view(text_).substr(t.text_begin, t.text_size); }
  std::uint64_t unsigned_value(const Token& t) const { return static_cast<std::uint64_t>(t.integer); }

  /// The index just past the value that starts at token `i` (a scalar, or a whole object or array).
  std::size_t skip_value(std::size_t i) const {
    int depth = 0;
    do {
      const Kind k = tokens_[i].kind;
      if (k == Kind::open_object || k == Kind::open_array) ++depth;
      else if (k == Kind::close_object || k == Kind::close_array) --depth;
      ++i;
    } while (depth > 0 && i < tokens_.size());
    return i;
  }

  /// The value as a DOM, built by replaying the tokens.
  nlohmann::json to_json() const {
    nlohmann::json out;
    nlohmann::detail::json_sax_dom_parser<nlohmann::json> dom(out, false);
    for (const Token& t : tokens_) {
      switch (t.kind) {
        case Kind::null: dom.null(); break;
        case Kind::boolean: dom.boolean(t.boolean); break;
        case Kind::integer: dom.number_integer(t.integer); break;
        case Kind::unsigned_integer: dom.number_unsigned(unsigned_value(t)); break;
        case Kind::floating: dom.number_float(t.floating, {}); break;
        case Kind::string: {
          std::string v(text(t));
          dom.string(v);
          break;
        }
        case Kind::key: {
          std::string v(text(t));
          dom.key(v);
          break;
        }
        case Kind::open_object: dom.start_object(std::size_t(-1)); break;
        case Kind::close_object: dom.end_object(); break;
        case Kind::open_array: dom.start_array(std::size_t(-1)); break;
        case Kind::close_array: dom.end_array(); break;
      }
    }
    return out;
  }

 private:
  void push_text(Kind kind, std::string_view v) {
    Token t{kind};
    t.text_begin = text_.size();
    t.text_size = v.size();
    text_.append(v);
    tokens_.push_back(t);
  }

  std::vector<Token> tokens_;
  std::string text_;
};

}  // namespace ridge::detail
