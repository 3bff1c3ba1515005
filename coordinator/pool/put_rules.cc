#include "coordinator/pool/put_rules.h"

namespace strata::pool {

std::string_view CascadeHopName(CascadeHop hop) {
  switch (hop) {
    case CascadeHop::kToNvme: return "to_nvme";
    case CascadeHop::kToManager: return "to_manager";
    case CascadeHop::kEndOfChain: return "end_of_chain";
  }
  return "unknown";
}

CascadeHop NextHop(LocalTier from, const ChainShape& chain) {
  if (from == LocalTier::kDram && chain.nvme == TierPresence::kPresent) {
    return CascadeHop::kToNvme;
  }
  if (chain.manager == ManagerState::kAvailable) return CascadeHop::kToManager;
  return CascadeHop::kEndOfChain;
}

std::string_view DropReasonName(DropReason reason) {
  switch (reason) {
    case DropReason::kEndOfChain: return "end_of_chain";
    case DropReason::kExpired: return "expired";
    case DropReason::kOversize: return "oversize";
    case DropReason::kIoError: return "io_error";
  }
  return "unknown";
}

std::string_view PutEventName(PutEvent event) {
  switch (event) {
    case PutEvent::kAccepted: return "accepted";
    case PutEvent::kQueueFull: return "queue_full";
    case PutEvent::kRefused: return "refused";
    case PutEvent::kSubmissionError: return "submission_error";
    case PutEvent::kTransferFailed: return "transfer_failed";
    case PutEvent::kManagerLost: return "manager_lost";
    case PutEvent::kEndOfChainEvict: return "end_of_chain_evict";
    case PutEvent::kExpired: return "expired";
    case PutEvent::kOversize: return "oversize";
    case PutEvent::kTerminalIoError: return "terminal_io_error";
  }
  return "unknown";
}

std::string_view PutActionName(PutAction action) {
  switch (action) {
    case PutAction::kReleaseSource: return "release_source";
    case PutAction::kDelay: return "delay";
    case PutAction::kRetryAfterProgress: return "retry_after_progress";
    case PutAction::kRetryAfterBackoff: return "retry_after_backoff";
    case PutAction::kDiscard: return "discard";
  }
  return "unknown";
}

namespace {

PutDecision Keep(PutAction action) { return {action, std::nullopt}; }
PutDecision Discard(DropReason reason) { return {PutAction::kDiscard, reason}; }

}  // namespace

PutDecision DecidePut(PutEvent event, uint32_t failures) {
  switch (event) {
    case PutEvent::kAccepted: return Keep(PutAction::kReleaseSource);
    case PutEvent::kQueueFull: return Keep(PutAction::kDelay);
    case PutEvent::kRefused:
    case PutEvent::kManagerLost: return Keep(PutAction::kRetryAfterProgress);
    case PutEvent::kSubmissionError: return Keep(PutAction::kRetryAfterBackoff);
    case PutEvent::kTransferFailed:
      return Keep(failures >= kPutFailuresBeforeBackoff ? PutAction::kRetryAfterBackoff
                                                        : PutAction::kRetryAfterProgress);
    case PutEvent::kEndOfChainEvict: return Discard(DropReason::kEndOfChain);
    case PutEvent::kExpired: return Discard(DropReason::kExpired);
    case PutEvent::kOversize: return Discard(DropReason::kOversize);
    case PutEvent::kTerminalIoError: return Discard(DropReason::kIoError);
  }
  return Keep(PutAction::kDelay);
}

RetryGate GateFor(PutAction action, uint64_t progress_epoch, uint64_t now_ms) {
  RetryGate gate{.progress_epoch = progress_epoch, .not_before_ms = 0};
  if (action == PutAction::kRetryAfterBackoff) gate.not_before_ms = now_ms + kPutBackoffMs;
  return gate;
}

bool MayRetry(const RetryGate& gate, uint64_t progress_epoch, uint64_t now_ms) {
  if (progress_epoch != gate.progress_epoch) return true;
  return gate.not_before_ms != 0 && now_ms >= gate.not_before_ms;
}

}  // namespace strata::pool
