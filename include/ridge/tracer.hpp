#pragma once
// Moved to ridge/trace/tracer.hpp; kept only until src/report/runner/report_runner.cpp includes that.
#include "ridge/trace/tracer.hpp"
