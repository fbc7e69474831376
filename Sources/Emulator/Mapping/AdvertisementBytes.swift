import BlueZ
import Bluetooth
import Profile

/// The advertising data and scan response BlueZ builds for an advertisement, as bytes (``AdvertisementLayout``'s).
public enum AdvertisementBytes {
    public static func build(_ advertisement: Advertisement) -> (advertisingData: AdvertisingData, scanResponse: AdvertisingData) {
        let layout = AdvertisementLayout(advertisement)
        return (layout.advertisingDataStructures, layout.scanResponseStructures)
    }
}
