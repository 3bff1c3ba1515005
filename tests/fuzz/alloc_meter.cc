#include "alloc_meter.h"

#include <sanitizer/allocator_interface.h>

#include "fuzz_check.h"

namespace strata::fuzz {
namespace {

bool g_metering = false;
size_t g_bytes = 0;
size_t g_largest = 0;

void OnMalloc(const volatile void* /*ptr*/, size_t size) {
  if (!g_metering) return;
  g_bytes += size;
  if (size > g_largest) g_largest = size;
}

void OnFree(const volatile void* /*ptr*/) {}

// Installed once, before the first meter.
bool InstallHooks() {
  FUZZ_CHECK(__sanitizer_install_malloc_and_free_hooks(OnMalloc, OnFree) != 0,
             "no room for another sanitizer malloc hook");
  return true;
}

}  // namespace

AllocMeter::AllocMeter() {
  static const bool installed = InstallHooks();
  (void)installed;
  FUZZ_CHECK(!g_metering, "AllocMeter is not reentrant");
  g_bytes = 0;
  g_largest = 0;
  g_metering = true;
}

AllocMeter::~AllocMeter() { g_metering = false; }

size_t AllocMeter::bytes() const { return g_bytes; }
size_t AllocMeter::largest() const { return g_largest; }

}  // namespace strata::fuzz
