#pragma once
// Run history: every run kept in one SQLite file (history_store.hpp), the commits where a record's
// level changed (history_check.hpp), and the page that shows both (history_page.hpp). CPU only;
// built when CMake finds SQLite (Debian libsqlite3-dev).
#include "ridge/history_check.hpp"
#include "ridge/history_page.hpp"
#include "ridge/history_store.hpp"
