import Testing

@testable import BlueZ

/// Which kernels hold a channel's central back when gattemu reads no more (credits follow the socket's free room
/// from Linux 6.10): read from the release `uname` gives.
@Suite struct L2CAPKernelTests {
    @Test(arguments: [
        ("6.12.95+deb12-amd64", true), ("6.10.0", true), ("7.0.1-arch1", true), ("6.1.0-57-amd64", false),
        ("6.9.12-200.fc40.x86_64", false), ("5.15.0-91-generic", false), ("", false), ("six", false),
    ])
    func creditsFollowReadsFromLinux6_10(_ release: String, _ withholds: Bool) {
        #expect(L2CAPChannelSocket.kernel(release, isAtLeast: (6, 10)) == withholds)
    }
}
