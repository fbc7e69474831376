import Hummingbird

/// The dashboard's files (`Sources/Control/Dashboard/`), embedded by `scripts/embed-assets` in
/// `DashboardAssets+Files.swift` (a test checks the two agree) and served at `/`. `gattemu report` inlines
/// the same files into one HTML file.
public enum DashboardAssets {
    public enum Asset: String, CaseIterable, Sendable {
        case page = "dashboard.html"
        case style = "dashboard.css"
        case script = "dashboard.js"
        case timeline = "timeline.js"
        /// `gattemu report`'s glue (not served).
        case report = "report.js"

        public var mediaType: String {
            switch self {
            case .page: "text/html; charset=utf-8"
            case .style: "text/css; charset=utf-8"
            case .script, .timeline, .report: "text/javascript; charset=utf-8"
            }
        }

        public var text: String {
            switch self {
            case .page: DashboardAssets.page
            case .style: DashboardAssets.style
            case .script: DashboardAssets.script
            case .timeline: DashboardAssets.timeline
            case .report: DashboardAssets.report
            }
        }
    }

    static func response(_ asset: Asset) -> Response {
        Response(
            status: .ok, headers: [.contentType: asset.mediaType, .cacheControl: "no-cache"],
            body: .init(byteBuffer: ByteBuffer(string: asset.text)))
    }
}
