// The one translation unit that compiles Boost.JSON (see common/CMakeLists.txt for why).
#include <boost/json/src.hpp>
