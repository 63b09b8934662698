import ATT
import BLERuntime
import GATT
import HCI

/// The JSONValue Schema (draft 2020-12) of the scenario format, for editors that complete and check
/// YAML against one (yaml-language-server: VS Code's YAML extension, Neovim, Helix, JetBrains).
///
/// It is made from the schema code, so that it cannot drift from it: the keys of every mapping
/// are the lists the code checks (`ScenarioSchema.keys`, `PeripheralSchema.keys`, …), the
/// keywords of steps, expectations and actions are the code's keyword lists, and each keyword's
/// fields are the ones the code reads it with, found by running the code on it (`KeywordProbe`).
/// A key added there appears here; what its value may be comes from `ScenarioJSONSchema.shape`
/// by its name, and a key that has no shape there yet takes any value (`untypedFields` names them).
///
/// A file the lab accepts must never be refused: editors read YAML 1.2, where `1800` is a number,
/// `true` a boolean and `~` null, while the lab reads every scalar as text. So each scalar form
/// accepts what YAML makes of every text the lab accepts in it, and what the code decides from the
/// whole file (which peripherals exist, which characteristics they declare, value sizes, the
/// order of steps) is left to `blelab validate`.
public enum ScenarioJSONSchema {
    /// The schema document, as `blelab schema` prints it and schema/blelab-scenario.schema.json holds it.
    public static var text: String { document.render(pretty: true) + "\n" }

    /// The fields read by the code whose value has no shape here (any value is accepted), as
    /// `place keyword.field`.
    public static var untypedFields: [String] {
        var builder = Builder()
        _ = builder.build()
        return builder.untyped
    }

    static var document: JSONValue {
        var builder = Builder()
        return builder.build()
    }

    struct Builder {
        var untyped: [String] = []

        mutating func build() -> JSONValue {
            var defs: [(String, JSONValue)] = Shapes.definitions
            defs.append(("peripheral", peripheral()))
            defs.append(("advertise", mapping(PeripheralSchema.advertiseKeys, in: "advertise")))
            defs.append(("scan-response", mapping(PeripheralSchema.scanResponseKeys, in: "scan-response")))
            defs.append(("service", mapping(PeripheralSchema.serviceKeys, in: "service", required: ["service"])))
            defs.append(("characteristic", mapping(PeripheralSchema.characteristicKeys, in: "characteristic", required: ["uuid", "properties"])))
            defs.append(("descriptor", mapping(DescriptorSchema.keys, in: "descriptor", required: ["uuid"])))
            defs.append(("security", mapping(SecuritySchema.settingKeys + ["request-security"], in: "security")))
            defs.append(("link", mapping(FaultSyntax.linkKeys, in: "link")))
            defs.append(("drop", mapping(FaultSyntax.dropKeys, in: "drop", required: ["att", "from"])))
            defs.append(("flaw", mapping(FlawSchema.keys, in: "flaw", required: ["request"])))
            defs.append(("step", steps()))
            defs.append(("expectation", expectations()))
            defs.append(("action", actions()))
            defs.append(("actions", .obj([
                ("description", "peripheral actions: a list such as [{ notify: FFE1 }], or one action"),
                ("anyOf", [.obj([("type", "array"), ("items", ref("action"))]), ref("action")]),
            ])))
            var root = mapping(ScenarioSchema.keys, in: "scenario", required: ["scenario", "peripherals", "central"])
            guard case var .object(members) = root else { return root }
            members.insert(("$schema", "https://json-schema.org/draft/2020-12/schema"), at: 0)
            members.insert(("title", "BLELab scenario"), at: 1)
            members.insert(("description", "A BLELab scenario file (docs/scenarios.md). Made by `blelab schema` from the code that reads scenarios; `blelab validate` checks what a schema cannot."), at: 2)
            members.append(("$defs", .obj(defs)))
            root = .obj(members)
            return root
        }

        // MARK: Mappings

        /// An object with exactly `keys`, each shaped by its name in `context`.
        mutating func mapping(_ keys: [String], in context: String, required: [String] = []) -> JSONValue {
            var properties: [(String, JSONValue)] = []
            for key in keys {
                properties.append((key, shape(key, context: context)))
            }
            var members: [(String, JSONValue)] = [("type", "object"), ("properties", .obj(properties))]
            let present = required.filter(keys.contains)
            if !present.isEmpty { members.append(("required", .array(present.map { .string($0) }))) }
            members.append(("additionalProperties", false))
            return .obj(members)
        }

        mutating func peripheral() -> JSONValue {
            mapping(PeripheralSchema.keys, in: "peripheral")
        }

        /// The shape of `key` in `context`, or any value (noted in `untyped`).
        mutating func shape(_ key: String, context: String) -> JSONValue {
            if let s = Shapes.shape(key, context: context) { return s }
            untyped.append("\(context).\(key)")
            return .obj([("description", .string("see docs/scenarios.md"))])
        }

        // MARK: Keywords

        /// One keyword of a list, as the schema code reads it.
        struct Item {
            var keyword: String
            /// The keyword's own value.
            var value: JSONValue
            /// The whole item: the keyword, what may stand beside it, nothing else (when closed).
            var schema: JSONValue
            /// The keys an item with this keyword may have (nil: any, its form is unknown).
            var keys: [String]?
        }

        /// The item written with `keyword`: its value in any form the code reads it in, and the
        /// fields it allows beside it (not another keyword of the same list).
        mutating func keywordItem(_ keyword: String, form: KeywordForm?, place: String, others: [String],
                                  description: String?) -> Item {
            var properties: [(String, JSONValue)] = []
            var value: JSONValue
            var closed = true
            switch form {
            case let .fields(primary, allowed)?:
                var forms: [JSONValue] = [.obj([("type", "null")])]
                if let primary { forms.append(shape(primary, context: "\(place) \(keyword)")) }
                var fields: [(String, JSONValue)] = []
                for field in allowed { fields.append((field, shape(field, context: "\(place) \(keyword)"))) }
                forms.append(.obj([("type", "object"), ("properties", .obj(fields)), ("additionalProperties", false)]))
                var members: [(String, JSONValue)] = []
                if let description { members.append(("description", .string(description))) }
                members.append(("anyOf", .array(forms)))
                value = .obj(members)
                properties.append((keyword, value))
                for (field, fieldShape) in fields where field != keyword && !others.contains(field) {
                    properties.append((field, fieldShape))
                }
            case .valueOnly?:
                value = shape(keyword, context: "\(place) value")
                if let description { value = Shapes.described(value, description) }
                properties.append((keyword, value))
            case nil:
                // Read by code of its own: any value, anything beside it.
                untyped.append("\(place) \(keyword)")
                value = description.map { .obj([("description", .string($0))]) } ?? .obj([])
                properties.append((keyword, value))
                closed = false
            }
            var members: [(String, JSONValue)] = [("required", [.string(keyword)]), ("properties", .obj(properties))]
            if closed { members.append(("additionalProperties", false)) }
            return Item(keyword: keyword, value: value, schema: .obj(members), keys: closed ? properties.map(\.0) : nil)
        }

        /// A list item that is one of `items`: `if` it has an item's keyword (`when`, by default
        /// that the keyword is there), `then` it is that item. Editors then name the key that is
        /// wrong, which one anyOf of all the items would not. `bare`: keywords written alone.
        func keywordList(_ items: [Item], when: [String: JSONValue] = [:], completes: [String], bare: [String]?, description: String) -> JSONValue {
            var members: [(String, JSONValue)] = [("type", "object")]
            members.append(("properties", .obj(items.filter { completes.contains($0.keyword) }.map { ($0.keyword, $0.value) })))
            if items.allSatisfy({ $0.keys != nil }) {
                var names: [String] = []
                for item in items { for key in item.keys ?? [] where !names.contains(key) { names.append(key) } }
                members.append(("propertyNames", .obj([("enum", .array(names.map { .string($0) }))])))
            }
            members.append(("anyOf", .array(items.map { .obj([("required", [.string($0.keyword)])]) })))
            members.append(("allOf", .array(items.map { item in
                .obj([("if", when[item.keyword] ?? .obj([("required", [.string(item.keyword)])])), ("then", item.schema)])
            })))
            let object = JSONValue.obj(members)
            guard let bare else { return .obj([("description", .string(description))] + Self.members(of: object)) }
            return .obj([
                ("description", .string(description)),
                ("if", .obj([("type", "string")])),
                ("then", .obj([("description", "a keyword written alone"), ("enum", .array(bare.map { .string($0) }))])),
                ("else", object),
            ])
        }

        static func members(of json: JSONValue) -> [(String, JSONValue)] {
            if case let .object(m) = json { return m.map { ($0.key, $0.value) } }
            return []
        }

        mutating func steps() -> JSONValue {
            var items: [Item] = []
            for keyword in CentralSchema.keywords {
                switch keyword {
                case "expect":
                    let value = ref("expectation")
                    items.append(Item(keyword: keyword, value: value,
                                      schema: .obj([("required", ["expect"]), ("properties", .obj([("expect", value)])), ("additionalProperties", false)]),
                                      keys: ["expect"]))
                case "peripheral":
                    let value: JSONValue = .obj([
                        ("description", .string("peripheral ids with their actions, e.g. \(CentralSchema.example("peripheral"))")),
                        ("type", "object"), ("propertyNames", Shapes.peripheralIDName), ("additionalProperties", ref("actions")),
                    ])
                    items.append(Item(keyword: keyword, value: value,
                                      schema: .obj([("required", ["peripheral"]), ("properties", .obj([("peripheral", value)])), ("additionalProperties", false)]),
                                      keys: ["peripheral"]))
                default:
                    let others = CentralSchema.keywords.filter { $0 != keyword && $0 != "peripheral" }
                    items.append(keywordItem(keyword, form: KeywordProbe.form(of: keyword, at: .step), place: "step", others: others,
                                             description: "e.g. " + CentralSchema.example(keyword)))
                }
            }
            // `peripheral` is a step only without another keyword: beside one, it names its peripheral.
            let others = CentralSchema.keywords.filter { $0 != "peripheral" }
            let peripheralStep: JSONValue = .obj([("required", ["peripheral"]),
                                                ("not", .obj([("anyOf", .array(others.map { .obj([("required", [.string($0)])]) }))]))])
            return keywordList(items, when: ["peripheral": peripheralStep], completes: others, bare: CentralSchema.bare,
                               description: "a step of the scripted central")
        }

        mutating func expectations() -> JSONValue {
            var items: [Item] = []
            for kind in ExpectationSchema.kinds {
                // `value` beside `notification` is the notification's value.
                let others = ExpectationSchema.kinds.filter { $0 != kind && !(kind == "notification" && $0 == "value") }
                items.append(keywordItem(kind, form: KeywordProbe.form(of: kind, at: .expectation), place: "expect", others: others,
                                         description: nil))
            }
            let value: JSONValue = .obj([("required", ["value"]), ("not", .obj([("required", ["notification"])]))])
            return keywordList(items, when: ["value": value], completes: ExpectationSchema.kinds.filter { $0 != "value" }, bare: nil,
                               description: "one expectation, such as { discovered: hm10 } or { notification: FFE1, value: text:hi }")
        }

        mutating func actions() -> JSONValue {
            let bare = ActionSchema.keywords.filter(KeywordProbe.acceptsBareAction)
            var items: [Item] = []
            for keyword in ActionSchema.keywords {
                let others = ActionSchema.keywords.filter { $0 != keyword }
                items.append(keywordItem(keyword, form: KeywordProbe.form(of: keyword, at: .action), place: "action", others: others,
                                         description: nil))
            }
            return keywordList(items, completes: ActionSchema.keywords, bare: bare,
                               description: "a peripheral action such as { notify: FFE1 } or { delay: 100ms }")
        }
    }

    static func ref(_ name: String) -> JSONValue { .obj([("$ref", .string("#/$defs/\(name)"))]) }
}

extension JSONValue {
    /// An object of (key, value) pairs, in their order.
    static func obj(_ members: [(String, JSONValue)]) -> JSONValue { .object(members.map { (key: $0.0, value: $0.1) }) }
}
