/// Exporting objects: method calls routed to their handlers, org.freedesktop.DBus.Properties,
/// Introspectable and ObjectManager answered here (D-Bus Specification, "Standard Interfaces").
/// This is what BlueZ's GattManager1.RegisterApplication and
/// LEAdvertisingManager1.RegisterAdvertisement call back into.
extension DBusConnection {
    /// Exports `object`. Under an object manager (`exportObjectManager`), InterfacesAdded is
    /// emitted for it. Throws when the path is taken or an interface is not valid.
    public func export(_ object: DBusExportedObject) throws {
        guard exportedObjects[object.path] == nil else { throw DBusError.alreadyExported(object.path) }
        for i in object.interfaces { try i.validate() }
        exportedObjects[object.path] = object
        for manager in managers(of: object.path) {
            var interfaces: [String: [String: DBusValue]] = [:]
            for i in object.interfaces { interfaces[i.name] = i.readableValues() }
            try? emitSignal(path: manager, interface: DBusInterfaceName.objectManager, member: "InterfacesAdded",
                            arguments: [.objectPath(object.path), .interfaceMap(interfaces)])
        }
    }

    /// Removes the object at `path` (InterfacesRemoved under an object manager).
    public func unexport(_ path: DBusObjectPath) {
        guard let object = exportedObjects.removeValue(forKey: path) else { return }
        for manager in managers(of: path) {
            try? emitSignal(path: manager, interface: DBusInterfaceName.objectManager, member: "InterfacesRemoved",
                            arguments: [.objectPath(path), .strings(object.interfaces.map(\.name))])
        }
    }

    /// Serves org.freedesktop.DBus.ObjectManager at `root`: GetManagedObjects lists every object
    /// exported below it (not `root` itself, as the specification says).
    public func exportObjectManager(at root: DBusObjectPath) {
        objectManagers.insert(root)
    }

    public func removeObjectManager(at root: DBusObjectPath) {
        objectManagers.remove(root)
    }

    /// Emits PropertiesChanged for `names` of `interface` on the object at `path`, with their
    /// current values (from the getters). Properties declared `emitsChanged: false` are skipped.
    public func propertiesChanged(path: DBusObjectPath, interface: String, _ names: [String]) throws {
        guard let object = exportedObjects[path], let i = object.interface(interface) else {
            throw DBusError.invalidValue("no interface \(interface) exported at \(path)")
        }
        var changed: [String: DBusValue] = [:]
        for name in names {
            guard let p = i.property(name) else { throw DBusError.invalidValue("\(interface) at \(path) has no property \(name)") }
            guard p.emitsChanged, p.readable else { continue }
            let value = try p.get()
            guard value.type == p.type else {
                throw DBusError.unexpectedType(expected: p.type.signature, actual: value.signature)
            }
            changed[name] = value
        }
        try emitSignal(path: path, interface: DBusInterfaceName.properties, member: "PropertiesChanged",
                       arguments: [.string(interface), .propertyMap(changed), .strings([])])
    }

    /// Object managers whose tree holds `path`.
    private func managers(of path: DBusObjectPath) -> [DBusObjectPath] {
        objectManagers.filter { path.isDescendant(of: $0, strictly: true) }.sorted()
    }

    /// The interfaces and properties of every object below `root`, as GetManagedObjects gives them.
    public func managedObjects(under root: DBusObjectPath) -> [DBusObjectPath: [String: [String: DBusValue]]] {
        var result: [DBusObjectPath: [String: [String: DBusValue]]] = [:]
        for (path, object) in exportedObjects where path.isDescendant(of: root, strictly: true) {
            var interfaces: [String: [String: DBusValue]] = [:]
            for i in object.interfaces { interfaces[i.name] = i.readableValues() }
            result[path] = interfaces
        }
        return result
    }

    // MARK: Routing calls

    /// Answers a method call addressed to this connection. Returns false for calls it does not
    /// take (libdbus then answers UnknownMethod).
    func dispatchMethodCall(_ message: DBusMessage) -> Bool {
        guard let path = message.path, let member = message.member else { return false }
        let interface = message.interface
        let object = exportedObjects[path]

        func error(_ name: String, _ text: String) -> Bool {
            if message.expectsReply, let reply = try? DBusMessage.errorReply(to: message, DBusErrorReply(name: name, message: text)) {
                try? send(reply)
            }
            return true
        }
        func reply(_ values: [DBusValue]) -> Bool {
            if message.expectsReply, let r = try? DBusMessage.methodReturn(to: message, arguments: values) { try? send(r) }
            return true
        }
        func arguments(_ signature: String) -> [DBusValue]? {
            guard message.signature == signature, let args = try? message.arguments() else {
                _ = error(DBusErrorReply.invalidArgs, "\(interface ?? "").\(member) takes '\(signature)', not '\(message.signature)'")
                return nil
            }
            return args
        }

        switch (interface, member) {
        case (DBusInterfaceName.introspectable?, "Introspect"):
            guard object != nil || objectManagers.contains(path) || !children(of: path).isEmpty else {
                return error(DBusErrorReply.unknownObject, "no object at \(path)")
            }
            guard arguments("") != nil else { return true }
            return reply([.string(introspectionXML(path))])

        case (DBusInterfaceName.objectManager?, "GetManagedObjects") where objectManagers.contains(path):
            guard arguments("") != nil else { return true }
            return reply([.managedObjects(managedObjects(under: path))])

        case (DBusInterfaceName.properties?, _):
            guard let object else { return error(DBusErrorReply.unknownObject, "no object at \(path)") }
            return propertiesCall(message, member: member, object: object, error: error, reply: reply, arguments: arguments)

        default:
            guard let object else { return error(DBusErrorReply.unknownObject, "no object at \(path)") }
            var found: (DBusInterface, DBusMethod)?
            if let interface {
                guard let i = object.interface(interface) else {
                    return error(DBusErrorReply.unknownInterface, "\(path) has no interface \(interface)")
                }
                if let m = i.methods.first(where: { $0.name == member }) { found = (i, m) }
            } else {
                // No interface in the call: the first interface with such a method (the specification allows this).
                for i in object.interfaces {
                    if let m = i.methods.first(where: { $0.name == member }) { found = (i, m); break }
                }
            }
            guard let (i, method) = found else {
                return error(DBusErrorReply.unknownMethod, "\(path) has no method \(interface.map { $0 + "." } ?? "")\(member)")
            }
            guard let args = arguments(method.inputSignature) else { return true }
            let invocation = DBusMethodInvocation(message: message, arguments: args, interface: i.name, method: member,
                                                  outputs: method.outputs.map(\.type), connection: self)
            method.handler(invocation)
            return true
        }
    }

    private func propertiesCall(_ message: DBusMessage, member: String, object: DBusExportedObject,
                                error: (String, String) -> Bool, reply: ([DBusValue]) -> Bool,
                                arguments: (String) -> [DBusValue]?) -> Bool {
        func lookup(_ interfaceName: String, _ name: String) -> (DBusInterface, DBusProperty)? {
            guard let i = object.interface(interfaceName) else {
                _ = error(DBusErrorReply.unknownInterface, "\(object.path) has no interface \(interfaceName)")
                return nil
            }
            guard let p = i.property(name) else {
                _ = error(DBusErrorReply.unknownProperty, "\(interfaceName) has no property \(name)")
                return nil
            }
            return (i, p)
        }
        func thrown(_ e: Error) -> Bool {
            if let reply = e as? DBusErrorReply { return error(reply.name, reply.message) }
            return error(DBusErrorReply.failed, "\(e)")
        }
        switch member {
        case "Get":
            guard let args = arguments("ss"), case .string(let iname) = args[0], case .string(let name) = args[1] else { return true }
            guard let (_, p) = lookup(iname, name) else { return true }
            guard p.readable else { return error(DBusErrorReply.failed, "\(iname).\(name) is write-only") }
            do {
                let value = try p.get()
                guard value.type == p.type else {
                    return error(DBusErrorReply.failed, "\(iname).\(name) is '\(p.type.signature)' but its getter gave '\(value.signature)'")
                }
                return reply([.variant(value)])
            } catch { return thrown(error) }
        case "GetAll":
            guard let args = arguments("s"), case .string(let iname) = args[0] else { return true }
            guard let i = object.interface(iname) else {
                return error(DBusErrorReply.unknownInterface, "\(object.path) has no interface \(iname)")
            }
            return reply([.propertyMap(i.readableValues())])
        case "Set":
            guard let args = arguments("ssv"), case .string(let iname) = args[0], case .string(let name) = args[1],
                  case .variant(let value) = args[2] else { return true }
            guard let (_, p) = lookup(iname, name) else { return true }
            guard p.writable, let set = p.set else { return error(DBusErrorReply.propertyReadOnly, "\(iname).\(name) is read-only") }
            guard value.type == p.type else {
                return error(DBusErrorReply.invalidArgs, "\(iname).\(name) is '\(p.type.signature)', not '\(value.signature)'")
            }
            do { try set(value) } catch { return thrown(error) }
            _ = reply([])
            if p.emitsChanged { try? propertiesChanged(path: object.path, interface: iname, [name]) }
            return true
        default:
            return error(DBusErrorReply.unknownMethod, "\(DBusInterfaceName.properties) has no method \(member)")
        }
    }

    // MARK: Introspection (D-Bus Specification, "Introspection Data Format")

    /// Names of the next path elements below `path` among exported objects and object managers.
    func children(of path: DBusObjectPath) -> [String] {
        var names = Set<String>()
        let prefix = path.rawValue == "/" ? "/" : path.rawValue + "/"
        for p in Array(exportedObjects.keys) + Array(objectManagers) where p.rawValue.hasPrefix(prefix) && p != path {
            if let first = p.rawValue.dropFirst(prefix.count).split(separator: "/").first { names.insert(String(first)) }
        }
        return names.sorted()
    }

    /// The introspection document of `path`: its interfaces, the standard ones it serves, and
    /// its children.
    public func introspectionXML(_ path: DBusObjectPath) -> String {
        var xml = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node>
          <interface name="org.freedesktop.DBus.Introspectable">
            <method name="Introspect"><arg name="xml" type="s" direction="out"/></method>
          </interface>

        """
        func args(_ list: [DBusArgument], _ direction: String?) -> String {
            list.map { a in
                "<arg name=\"\(escape(a.name))\" type=\"\(escape(a.type.signature))\"" + (direction.map { " direction=\"\($0)\"" } ?? "") + "/>"
            }.joined()
        }
        if let object = exportedObjects[path] {
            xml += """
              <interface name="org.freedesktop.DBus.Properties">
                <method name="Get"><arg name="interface" type="s" direction="in"/><arg name="name" type="s" direction="in"/><arg name="value" type="v" direction="out"/></method>
                <method name="GetAll"><arg name="interface" type="s" direction="in"/><arg name="properties" type="a{sv}" direction="out"/></method>
                <method name="Set"><arg name="interface" type="s" direction="in"/><arg name="name" type="s" direction="in"/><arg name="value" type="v" direction="in"/></method>
                <signal name="PropertiesChanged"><arg name="interface" type="s"/><arg name="changed" type="a{sv}"/><arg name="invalidated" type="as"/></signal>
              </interface>

            """
            for i in object.interfaces {
                xml += "  <interface name=\"\(escape(i.name))\">\n"
                for m in i.methods {
                    xml += "    <method name=\"\(escape(m.name))\">" + args(m.inputs, "in") + args(m.outputs, "out") + "</method>\n"
                }
                for s in i.signals {
                    xml += "    <signal name=\"\(escape(s.name))\">" + args(s.arguments, nil) + "</signal>\n"
                }
                for p in i.properties {
                    xml += "    <property name=\"\(escape(p.name))\" type=\"\(escape(p.type.signature))\" access=\"\(p.access.rawValue)\""
                    if p.emitsChanged {
                        xml += "/>\n"
                    } else {
                        xml += "><annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" value=\"false\"/></property>\n"
                    }
                }
                xml += "  </interface>\n"
            }
        }
        if objectManagers.contains(path) {
            xml += """
              <interface name="org.freedesktop.DBus.ObjectManager">
                <method name="GetManagedObjects"><arg name="objects" type="a{oa{sa{sv}}}" direction="out"/></method>
                <signal name="InterfacesAdded"><arg name="object" type="o"/><arg name="interfaces" type="a{sa{sv}}"/></signal>
                <signal name="InterfacesRemoved"><arg name="object" type="o"/><arg name="interfaces" type="as"/></signal>
              </interface>

            """
        }
        for child in children(of: path) { xml += "  <node name=\"\(escape(child))\"/>\n" }
        xml += "</node>\n"
        return xml
    }

    private func escape(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.append(c)
            }
        }
        return out
    }
}
