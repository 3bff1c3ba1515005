#include "coordinator/pool/export_copier.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "coordinator/pool/pool_record_image.h"
#include "store/base/deliberate_leak.h"

namespace strata::pool {

ExportCopier::ExportCopier(std::unique_ptr<Transfers> transfers, const CacheGeometry& geometry,
                           HostRegistrar* registrar)
    : transfers_(std::move(transfers)), registrar_(registrar) {
  const RecordLayout layout(geometry);
  sizes_ = ExportRecordSizes{.page_record_bytes = layout.page_record_bytes(),
                             .row_segment_bytes = layout.row_segment_bytes()};
}

ExportCopier::~ExportCopier() {
  if (Status s = transfers_->Close(kExportCopierCloseBound); !s.ok()) {
    // Copies may still write the staging: it must outlive them.
    spdlog::warn("prefix cache pool: export copies did not drain: {}", s.ToString());
    LeakOnPurpose(std::make_unique<AlignedBuffer>(std::move(staging_)));
    LeakOnPurpose(std::move(transfers_));
    return;
  }
  if (registered_) (void)registrar_->Unregister(staging_.data());
}

Status ExportCopier::Reserve(uint64_t bytes) {
  const bool usable = registrar_ == nullptr || registered_;
  if (staging_.size() >= bytes && usable) return Status::Ok();
  if (registered_) {
    STRATA_RETURN_IF_ERROR(registrar_->Unregister(staging_.data()));
    registered_ = false;
  }
  // Large enough but not registered (a registration failed before): registered again.
  if (staging_.size() < bytes) staging_ = AlignedBuffer(bytes);
  if (registrar_ != nullptr) {
    STRATA_RETURN_IF_ERROR(registrar_->Register(staging_.data(), staging_.size()));
    registered_ = true;
  }
  return Status::Ok();
}

Status ExportCopier::Start(uint64_t tag, const ExportDescription& description) {
  if (busy()) return Status::Busy("an export is copying");
  STRATA_RETURN_IF_ERROR(Reserve(ExportBytes(description, sizes_)));
  copying_ = Copying{.tag = tag,
                     .description = description,
                     .next_page = 0,
                     .row_submitted = false,
                     .jobs_out = 0,
                     .status = Status::Ok()};
  return Status::Ok();
}

bool ExportCopier::SubmitNext() {
  Copying& c = *copying_;
  const std::vector<PageId>& pages = c.description.pages;
  if (c.next_page >= pages.size() && c.row_submitted) return false;
  const size_t n = std::min<size_t>(pages.size() - c.next_page, kMaxWindowPages);
  TransferJob job;
  job.id = JobId(next_job_);
  job.direction = TransferDirection::kDeviceToHost;
  for (size_t i = c.next_page; i < c.next_page + n; ++i) {
    job.page_ids.push_back(pages[i]);
    job.page_records.push_back(reinterpret_cast<uint8_t*>(staging_.data()) +
                               i * sizes_.page_record_bytes);
  }
  const bool last = c.next_page + n == pages.size();
  if (last) {
    job.row_slot = c.description.row_slot;
    job.row_pieces.push_back(HostPiece{.data = reinterpret_cast<uint8_t*>(staging_.data()) +
                                               pages.size() * sizes_.page_record_bytes,
                                       .bytes = sizes_.row_segment_bytes});
  }
  Status s = transfers_->Submit(std::move(job));
  if (s.code() == StatusCode::kBusy) return false;
  ++next_job_;
  if (!s.ok()) {
    if (c.status.ok()) c.status = s;
    c.next_page = pages.size();
    c.row_submitted = true;
    return false;
  }
  c.next_page += n;
  c.row_submitted = last;
  ++c.jobs_out;
  return true;
}

std::optional<ExportCopier::Finished> ExportCopier::Poll() {
  if (!copying_) return std::nullopt;
  while (SubmitNext()) {
  }
  std::vector<TransferCompletion> done;
  transfers_->Poll(done);
  for (const TransferCompletion& t : done) {
    --copying_->jobs_out;
    if (!t.status.ok() && copying_->status.ok()) copying_->status = t.status;
  }
  const Copying& c = *copying_;
  if (c.jobs_out != 0 || c.next_page < c.description.pages.size() || !c.row_submitted) {
    return std::nullopt;
  }
  Finished f{.tag = c.tag, .status = c.status};
  pages_copied_ = static_cast<uint32_t>(c.description.pages.size());
  copying_.reset();
  return f;
}

std::vector<std::byte> ExportCopier::Image(const PrefixKey& key,
                                           const std::optional<PrefixKey>& parent,
                                           const Digest128& bucket) const {
  RecordView view{.key = key,
                  .parent = parent,
                  .bucket = bucket,
                  .tail_pages = pages_copied_,
                  .replicated_pages = false,
                  .replicated_row = false,
                  .pages = {},
                  .row = {}};
  const std::byte* base = staging_.data();
  for (uint32_t i = 0; i < pages_copied_; ++i) {
    view.pages.emplace_back(base + i * sizes_.page_record_bytes, sizes_.page_record_bytes);
  }
  view.row.emplace_back(base + uint64_t{pages_copied_} * sizes_.page_record_bytes,
                        sizes_.row_segment_bytes);
  return EncodeRecordImage(view);
}

}  // namespace strata::pool
