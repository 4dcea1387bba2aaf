#pragma once

#include <boost/test/unit_test.hpp>

// Checks whose message reads the cluster (describe(), say). Boost builds a check's
// message as one more argument of the check, and GCC evaluates that argument before the
// condition: BOOST_REQUIRE_MESSAGE(await_plan_phase(...), describe(...)) described the
// cluster as it was before the wait, and a failure looked like a stale API server. These
// evaluate the condition first, and the message only if it failed.
#define E2E_REQUIRE(condition, message)                                                            \
  do {                                                                                             \
    if (condition)                                                                                 \
      BOOST_REQUIRE(true);                                                                         \
    else                                                                                           \
      BOOST_REQUIRE_MESSAGE(false, message);                                                       \
  } while (false)
#define E2E_CHECK(condition, message)                                                              \
  do {                                                                                             \
    if (condition)                                                                                 \
      BOOST_CHECK(true);                                                                           \
    else                                                                                           \
      BOOST_CHECK_MESSAGE(false, message);                                                         \
  } while (false)
