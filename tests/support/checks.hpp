#pragma once

#include <boost/test/unit_test.hpp>

#include <iostream>
#include <sstream>

// Checks whose message reads the cluster (describe(), say). Boost builds a check's
// message as one more argument of the check, and GCC evaluates that argument before the
// condition: BOOST_REQUIRE_MESSAGE(await_plan_phase(...), describe(...)) described the
// cluster as it was before the wait, and a failure looked like a stale API server. These
// evaluate the condition first, and the message only if it failed.
#define E2E_CHECK_AT(level, condition, message)                                                    \
  do {                                                                                             \
    if (condition)                                                                                 \
      BOOST_##level(true);                                                                         \
    else                                                                                           \
      BOOST_##level##_MESSAGE(false, message);                                                     \
  } while (false)
#define E2E_REQUIRE(condition, message) E2E_CHECK_AT(REQUIRE, condition, message)
#define E2E_CHECK(condition, message) E2E_CHECK_AT(CHECK, condition, message)

// Progress and figures (wall times, peaks) on stderr: they land in the test log whatever
// Boost.Test's log level.
#define E2E_NOTE(what)                                                                             \
  do {                                                                                             \
    std::ostringstream e2e_note_;                                                                  \
    e2e_note_ << what;                                                                             \
    std::cerr << "e2e: " << e2e_note_.str() << std::endl;                                          \
  } while (false)
