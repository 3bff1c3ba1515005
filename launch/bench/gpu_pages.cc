#include "launch/bench/gpu_pages.h"

#include <algorithm>
#include <random>

#include "cuda/cuda_transfers.h"
#include "launch/presets.h"
#include "store/record/record_layout.h"

namespace strata {

Result<std::unique_ptr<GpuPages>> OpenGpuPages(const std::shared_ptr<const CudaDriver>& driver,
                                               const std::string& preset, uint64_t pages,
                                               int device, const CudaTransfersOptions& options) {
  auto p = std::make_unique<GpuPages>();
  STRATA_ASSIGN_OR_RETURN(p->geometry, PresetGeometry(preset, 1, pages, 1));
  STRATA_ASSIGN_OR_RETURN(p->planes, CudaPlanes::Create(driver, p->geometry, {device}));
  STRATA_ASSIGN_OR_RETURN(p->registrar, CudaHostRegistrar::Create(driver, device));
  STRATA_ASSIGN_OR_RETURN(p->pool, SlabPool::Create(RecordLayout(p->geometry).page_record_bytes(),
                                                    pages, 0, p->registrar.get()));
  std::vector<SlotId> slots;
  if (!p->pool->Allocate(pages, 0, slots)) return Status::Internal("slab pool too small");
  p->records.reserve(slots.size());
  for (SlotId s : slots) p->records.push_back(p->pool->address(s));
  p->ids.resize(pages);
  for (uint64_t i = 0; i < pages; ++i) p->ids[i] = PageId(static_cast<uint32_t>(i));
  std::shuffle(p->ids.begin(), p->ids.end(), std::mt19937_64(7));
  STRATA_ASSIGN_OR_RETURN(p->transfers, MakeCudaTransfers(*p->planes, options));
  return p;
}

}  // namespace strata
