// attach::UniqueFd is wire's (wire/unique_fd.h): the attach client, the
// server and the runtime's planes name it here.
#pragma once

#include "wire/unique_fd.h"

namespace strata::attach {

using wire::UniqueFd;

}  // namespace strata::attach
