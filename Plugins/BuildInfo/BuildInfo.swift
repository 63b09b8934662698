import Foundation
import PackagePlugin

/// Before each build of the target using it, runs tools/build-info.sh, which writes
/// BuildInfo.swift (the git commit of the sources, for `blelab --version`) into the plugin's
/// work folder; SwiftPM compiles it with the target. The script leaves the file alone when
/// nothing changed, so an unchanged checkout rebuilds nothing.
@main
struct BuildInfo: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("generated")
        let script = context.package.directoryURL.appendingPathComponent("tools").appendingPathComponent("build-info.sh")
        return [.prebuildCommand(displayName: "blelab build info (git commit)", executable: URL(fileURLWithPath: "/bin/sh"),
                                 arguments: [script.path, output.path], outputFilesDirectory: output)]
    }
}
