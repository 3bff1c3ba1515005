#include "store/tier/export_hooks.h"

namespace strata {

std::string_view ExportRefusalName(ExportRefusal refusal) {
  switch (refusal) {
    case ExportRefusal::kNotFound: return "not_found";
    case ExportRefusal::kGenerationChanged: return "generation_changed";
    case ExportRefusal::kChainGap: return "chain_gap";
    case ExportRefusal::kNoHeadroom: return "no_headroom";
  }
  return "unknown";
}

uint64_t ExportBytes(const ExportDescription& description, const ExportRecordSizes& sizes) {
  return description.pages.size() * sizes.page_record_bytes + sizes.row_segment_bytes;
}

}  // namespace strata
