import BlueZ
import Bluetooth
import DBus
import FoundationEssentials
import Profile

/// Runs one profile on one adapter: registers it with BlueZ, answers centrals through the behaviour engine,
/// executes the engine's effects in order, and logs every operation.
///
/// Start with ``start()``; stop with ``stop()``, which unregisters everything and restores the adapter alias.
/// The actor runs on the thread of its D-Bus connection (`loop`), so a request is read, answered and its
/// notifications sent without a thread hand-off; nothing in it may block.
public actor Emulator {
    /// The emulator's executor and the thread of its bus connection.
    let loop: DBusEventLoop
    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    let profile: DeviceProfile
    let options: EmulatorOptions
    let log: DeviceEventLog
    var engine: BehaviourEngine
    var stack: BlueZStack?
    var adapter: Adapter?
    var application: GattApplication?
    /// The GATT table is registered with bluetoothd as `absentServices` says (with no service present, that is
    /// no application at all).
    var tableRegistered = false
    /// Services left out of the GATT table now (`"present": false`, or removed through the control API).
    var absentServices: Set<String>
    var advertisements: [AdvertisementRegistration] = []
    /// `startAdvertising()` is registering them (see there).
    var startingAdvertising = false
    var watcher: CentralWatcher?
    var originalAlias: String?
    var timers: [String: ArmedTimer] = [:]
    var effectTail: Task<Void, Never>?
    /// Events whose after-the-answer effects are queued on `effectTail` and not yet done (Emulator+Effects.swift).
    /// The after-the-answer effects of each event still waiting or running (see `run(_:central:)`), by chain id.
    var effectChains: [UInt64: Task<Void, Never>] = [:]
    var nextEffectChain: UInt64 = 0
    /// Operations whose answer waits for the effects of earlier events (at most ``maximumWaitingOperations``).
    var operationsWaitingForEffects = 0
    var centralEvents: AsyncStream<CentralEvent>.Continuation?
    /// Hands ``centralEvents`` to the actor; awaited on stop so its events are logged before `stopped`.
    var centralEventsTask: Task<Void, Never>?
    /// Each central: connected or not, in which order, and its link's ATT MTU.
    var centrals = CentralRegistry()
    var stopped = false
    /// Fault engine and control-API bookkeeping (see `Emulator+Faults.swift`).
    var faultState: FaultState
    var stackLost = false
    var recoveryRetry: Task<Void, Never>?
    /// A registration attempt after a loss is under way (see `recover(reason:)`).
    var recovering = false
    var stackChanges: AsyncStream<StackChange>.Continuation?
    var stackSubscriptions: [DBusSignalSubscription] = []
    /// The pairing agent and the prompt waiting for the control API (see `Emulator+Pairing.swift`).
    var pairing = PairingState()
    /// The profile's L2CAP channels: listeners and open channels (see `Emulator+Channels.swift`).
    var channels = ChannelState()
    /// The address change gattemu made: the LE privacy key it gave the controller (see `Emulator+Address.swift`).
    var address = AddressState()
    /// What answers centrals (the profile's rules, or `gattemu relay`'s device) with the faults around it, both ways.
    var pipeline = Emulator.pipeline(answeredBy: ProfileResponder())
    let terminationRequests: AsyncStream<String>.Continuation
    /// Reasons the emulator wants the program to end (e.g. bluetoothd lost with `exitOnLoss`).
    public nonisolated let terminations: AsyncStream<String>

    /// `loop` is the thread the emulator and its D-Bus connection run on; one of its own when nil. `gattemu relay`
    /// shares one with its link to the device, so what crosses from one to the other needs no thread hop.
    public init(profile: DeviceProfile, options: EmulatorOptions, log: EventLog, loop: DBusEventLoop? = nil) throws(DBusError) {
        try self.init(profile: profile, options: options, log: DeviceEventLog(log), loop: loop)
    }

    /// An emulator recording into `log`, a device's view of the process's log (a rig's devices share one).
    public init(profile: DeviceProfile, options: EmulatorOptions, log: DeviceEventLog, loop: DBusEventLoop? = nil) throws(DBusError) {
        if let loop {
            self.loop = loop
        } else {
            self.loop = try DBusEventLoop(name: "gattemu d-bus")
        }
        self.profile = profile
        self.options = options
        self.log = log
        self.engine = BehaviourEngine(
            profile: profile, environment: EngineEnvironment(adapterAddress: .zero, seed: options.seed))
        self.faultState = FaultState(seed: options.seed)
        let declared = Set(profile.services.filter { !$0.present }.map(\.id))
        self.absentServices = profile.firmware.map { $0.absentServices(running: $0.version, besides: declared) } ?? declared
        (terminations, terminationRequests) = AsyncStream.makeStream(of: String.self)
        if let firmware = profile.firmware {
            // The SMP characteristic is the firmware target's; everything else the rules'.
            pipeline = Self.pipeline(
                answeredBy: RoutingResponder(routes: [firmware.characteristic: FirmwareResponder(firmware)], fallback: ProfileResponder()))
        }
    }

    /// Connects to bluetoothd, prepares the adapter and registers the application and advertisements.
    public func start() async throws(BlueZError) {
        let bus: DBusBus =
            switch options.bus {
            case .system: .system
            case .address(let address): .address(address)
            }
        let stack = try await BlueZStack.connect(bus: bus, on: loop)
        self.stack = stack
        let refusals = RefusalLog(log: log)
        stack.connection.onRefusal { refusals.record($0) }
        let requests = terminationRequests
        stack.connection.onDisconnect { requests.yield("lost the connection to the D-Bus system bus") }
        let adapter = try await stack.adapter(options.adapter)
        self.adapter = adapter
        let configuration = await BluetoothdConfiguration.of(stack)
        try checkAdvertising(on: adapter, configuration: configuration)
        engine = BehaviourEngine(profile: profile, environment: EngineEnvironment(adapterAddress: adapter.address, seed: options.seed))
        originalAlias = adapter.alias
        let (events, continuation) = AsyncStream.makeStream(of: CentralEvent.self)
        centralEvents = continuation
        centralEventsTask = Task(executorPreference: loop) { [weak self] in
            for await event in events { await self?.centralEvent(event) }
        }
        try await register(on: adapter, stack: stack)
        try await watchStack(stack, adapter: adapter)
        try startChannels(on: adapter)
        // The timers that start with the device (`"start": "run"`: a beacon's rotation).
        for effect in engine.started() { await perform(effect, central: latestCentral) }
        if profile.firmware != nil { log.record(.firmware, detail: FirmwareMTUAdvice.note(configuration)) }
        log.record(
            .started,
            detail:
                "\(profile.file) on \(adapter.name) (\(adapter.address)) as \"\(engine.deviceName() ?? adapter.alias)\", seed \(options.seed)"
        )
    }

    /// Refuses a profile asking for advertising the adapter does not offer (instances, secondary channels, bytes, TX
    /// power), each problem located in the profile; logs what bluetoothd would quietly not apply.
    func checkAdvertising(on adapter: Adapter, configuration: BluetoothdConfiguration?) throws(BlueZError) {
        let problems = ProfileMapping.advertisingProblems(
            profile, on: adapter.advertising, adapter: adapter.name, experimental: configuration?.experimental)
        for warning in problems where warning.severity == .warning { log.record(.note, detail: warning.description) }
        let errors = problems.filter { $0.severity == .error }
        if !errors.isEmpty { throw .advertisingBeyondAdapter(errors.map(\.description)) }
    }

    /// Sets the alias, follows centrals, registers the application and (if the engine says so) advertises.
    func register(on adapter: Adapter, stack: BlueZStack) async throws(BlueZError) {
        if !adapter.powered { try await adapter.powerOn() }
        guard adapter.canAdvertise else {
            throw .call(
                "adapter \(adapter.name) cannot advertise", .named("org.bluez.Error.NotSupported", message: "no LEAdvertisingManager1"))
        }
        // Following centrals takes round trips that nothing but advertising needs to wait for: they run
        // alongside setting the alias and registering the application.
        async let watching = Self.watchCentrals(adapter: adapter, stack: stack, events: centralEvents)
        do throws(BlueZError) {
            if let name = engine.deviceName() { try await adapter.setAlias(name) }
            try await registerApplication(adapter: adapter, stack: stack)
        } catch {
            if case .success(let started)? = await watching { await started.cancel() }
            throw error
        }
        switch await watching {
        case .failure(let error)?:
            await unregisterApplication()
            throw error
        case .success(let started)?: watcher = started
        case nil: break
        }
        do {
            try await registerAgent(stack: stack)
            try await applySecureConnections(on: adapter)
        } catch {
            await unregisterAgent()
            await watcher?.cancel()
            watcher = nil
            await unregisterApplication()
            throw error
        }
        if engine.isAdvertising { try await startAdvertising() }
    }

    /// Registers the GATT application with the services present now; with none, registers nothing (bluetoothd
    /// refuses an application without objects: "No object received") and the device has no GATT table of its own.
    func registerApplication(adapter: Adapter, stack: BlueZStack) async throws(BlueZError) {
        let services = ProfileMapping.services(of: profile, engine: engine, notifyPath: options.notifyPath, absent: absentServices)
        guard !services.isEmpty else {
            log.record(.note, detail: "no service present: no GATT application registered")
            tableRegistered = true
            return
        }
        do {
            application = try await GattApplication.register(services: services, handler: self, adapter: adapter, stack: stack)
        } catch {
            // Handles a profile asks for (an imported device's) may collide with BlueZ's own services.
            guard services.contains(where: \.asksForHandles) else { throw error }
            log.record(
                .note, detail: "bluetoothd refused the profile's handles (\(error.description)): registering with handles it chooses")
            application = try await GattApplication.register(
                services: services.map(\.withoutHandles), handler: self, adapter: adapter, stack: stack)
        }
        tableRegistered = true
    }

    /// Unregisters the GATT application, if any: the device has no table registered until the next
    /// ``registerApplication(adapter:stack:)``.
    func unregisterApplication() async {
        await application?.unregister()
        application = nil
        tableRegistered = false
    }

    /// A ``CentralWatcher`` feeding `events`, the outcome as a value (for `async let`); nil without `events`.
    private static func watchCentrals(
        adapter: Adapter, stack: BlueZStack, events: AsyncStream<CentralEvent>.Continuation?
    ) async -> Result<CentralWatcher, BlueZError>? {
        guard let events else { return nil }
        do {
            return .success(try await CentralWatcher.watch(adapter: adapter, stack: stack) { events.yield($0) })
        } catch {
            return .failure(error)
        }
    }

    /// Unregisters advertisements and the application, restores the alias and closes the bus connection.
    public func stop() async {
        guard !stopped else { return }
        stopped = true
        for timer in timers.values { timer.task.cancel() }
        timers = [:]
        for task in faultState.scheduled.values { task.cancel() }
        faultState.scheduled = [:]
        stopChannels()
        await stopAdvertising()
        await unregisterApplication()
        await unregisterAgent()
        await restoreSecureConnections()
        await restoreAddress()
        await watcher?.cancel()
        recoveryRetry?.cancel()
        for subscription in stackSubscriptions { await subscription.cancel() }
        stackChanges?.finish()
        centralEvents?.finish()
        terminationRequests.finish()
        if let adapter, let originalAlias {
            try? await adapter.setAlias(originalAlias)
        }
        await stack?.close()
        // What is still under way logs before `stopped`, so that `stopped` is the last event: the central
        // events already received, and effects left to run after earlier answers.
        await centralEventsTask?.value
        hurryEffectChains()
        await effectTail?.value
        log.record(.stopped)
    }

    // MARK: Advertising

    func startAdvertising() async throws(BlueZError) {
        // One start at a time: a power-on signal and gattemu's own power cycle both start advertising, and the
        // second must not export the objects the first is registering.
        guard let adapter, let stack, advertisements.isEmpty, !startingAdvertising, pipeline.responder.mayAdvertise else { return }
        startingAdvertising = true
        defer { startingAdvertising = false }
        for (index, spec) in engine.advertisements().enumerated() {
            let advertisement = ProfileMapping.advertisement(spec)
            let registration = try await AdvertisementRegistration.register(
                advertisement, adapter: adapter, stack: stack, path: DBusObjectPath("/org/gattemu/advertisement\(index)"),
                onRelease: { [weak self] in Task { await self?.advertisementReleased(index) } })
            advertisements.append(registration)
            log.record(.advertising, detail: Self.describe(advertisement, budget: budget(of: advertisement)))
        }
    }

    func stopAdvertising() async {
        let all = advertisements
        advertisements = []
        for registration in all { await registration.unregister() }
        if !all.isEmpty { log.record(.advertisingStopped) }
    }

    func refreshAdvertisements() async {
        guard !stopped else { return }  // stopping: the advertisements are going, nothing to change on air
        let specs = engine.advertisements()
        for (registration, spec) in zip(advertisements, specs) {
            let advertisement = ProfileMapping.advertisement(spec)
            guard advertisement != registration.advertisement else { continue }
            do {
                if try await registration.update(advertisement) {
                    log.record(.advertisementChanged, detail: Self.describe(advertisement, budget: budget(of: advertisement)))
                }
            } catch {
                log.record(.error, detail: error.description)
            }
        }
    }

    func advertisementReleased(_ index: Int) {
        log.record(.note, detail: "bluetoothd released advertisement \(index)")
    }

    /// The advertisement's bytes against the adapter's limits (the default ones before there is an adapter).
    func budget(of advertisement: Advertisement) -> AdvertisementBudget {
        AdvertisementBudget(advertisement, limits: adapter?.advertising.limits(for: advertisement))
    }

    static func describe(_ advertisement: Advertisement, budget: AdvertisementBudget) -> String {
        var parts: [String] = []
        if let name = advertisement.localName { parts.append("name \"\(name)\"") }
        if !advertisement.serviceUUIDs.isEmpty {
            parts.append("services \(advertisement.serviceUUIDs.map(\.description).joined(separator: ","))")
        }
        for (company, bytes) in advertisement.manufacturerData.sorted(by: { $0.key < $1.key }) {
            parts.append("manufacturer \(company.hexLiteral(digits: 4)): " + bytes.hexString(separator: " ", uppercase: false))
        }
        if let channel = advertisement.secondaryChannel { parts.append("extended, secondary channel \(channel.rawValue)") }
        parts.append(budget.description)
        return parts.joined(separator: "; ")
    }
}
