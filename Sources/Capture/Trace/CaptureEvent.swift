/// What decoding a record produced, in capture order; ``CaptureTrace`` and ``CaptureSummary`` are built
/// from these, and a consumer that keeps nothing can decode any size of capture in bounded memory.
public enum CaptureEvent: Sendable {
    /// A controller became known or changed (address, name).
    case controller(ControllerInfo)
    case advertisingReport(AdvertisingReport)
    /// A connection opened or changed (encryption, parameters, inferred role, closed): the same ``CaptureConnection/id``
    /// replaces the earlier value.
    case connection(CaptureConnection)
    case connectionFailed(ConnectionAttempt)
    case att(ATTPDU)
    /// A request completed, errored or left unanswered; comes after its PDUs.
    case attTransaction(ATTTransaction)
    case smp(SMPPDU)
    case signalling(L2CAPSignal)
    /// An SDU of an LE credit-based channel an app opened (not EATT).
    case channelSDU(ChannelSDU)
    case problem(CaptureProblem)
    case note(CaptureNote)
}
