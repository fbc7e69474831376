import Bluetooth

extension DeviceReplica {
    /// An LE credit-based channel the central opened on the device (a PSM), with what went over it on each
    /// connection, in order.
    public struct ChannelRecording: Sendable, Hashable {
        public var psm: UInt16
        /// One list of SDUs per connection that used the channel.
        public var sessions: [[SDU]] = []

        public init(psm: UInt16) { self.psm = psm }

        /// One SDU: who sent it, its bytes, where it came from.
        public struct SDU: Sendable, Hashable {
            public var fromCentral: Bool
            public var value: [UInt8]
            public var frame: Int?
            public var time: Double?

            public init(fromCentral: Bool, value: [UInt8], frame: Int? = nil, time: Double? = nil) {
                self.fromCentral = fromCentral
                self.value = value
                self.frame = frame
                self.time = time
            }
        }

        /// The largest SDU the central sent (what the device's MTU had to take).
        public var largestFromCentral: Int {
            sessions.joined().filter(\.fromCentral).map(\.value.count).max() ?? 0
        }
    }
}
