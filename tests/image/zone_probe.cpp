// Prints the UTC offset, in minutes, of each IANA zone named on the command line on
// 2026-07-01, looked up as change windows look zones up (date::locate_zone over the
// system's zoneinfo). tests/image runs it inside the image's root file system.
#include <date/tz.h>

#include <chrono>
#include <exception>
#include <iostream>

int main(int argc, char** argv) {
  const date::sys_seconds summer{date::sys_days{date::year{2026} / 7 / 1}};
  for (int i = 1; i < argc; ++i) {
    try {
      const auto offset = date::locate_zone(argv[i])->get_info(summer).offset;
      std::cout << argv[i] << ' '
                << std::chrono::duration_cast<std::chrono::minutes>(offset).count() << '\n';
    } catch (const std::exception& e) {
      std::cerr << argv[i] << ": " << e.what() << '\n';
      return 1;
    }
  }
  return 0;
}
