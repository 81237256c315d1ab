"""What tools/install.sh installs of //:tensorcut, as Bazel rules.

library_objects: every object of the library in one relocatable object, the
input of libtensorcut.so, and in an archive of that one object,
libtensorcut.a. A program that links the archive and uses anything of it gets
all of it, including the objects that only register things at start-up (the
autodiff rules, as alwayslink does for Bazel users).

public_headers: the headers the umbrella header includes, directly or not,
as the tree PREFIX/include/ holds: tensorcut/nn/layers.h, with every project
include rewritten from "nn/module.h" to "tensorcut/nn/module.h".
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")

def _library_objects_impl(ctx):
    linker_inputs = [
        li
        for dep in ctx.attr.deps
        for li in dep[CcInfo].linking_context.linker_inputs.to_list()
    ]
    archives = []
    for linker_input in linker_inputs:
        for library in linker_input.libraries:
            if library.pic_static_library:
                archives.append(library.pic_static_library)
            elif library.static_library:
                fail("%s has no position-independent archive to install" % linker_input.owner)
    toolchain = find_cpp_toolchain(ctx)
    ctx.actions.run_shell(
        inputs = depset(archives, transitive = [toolchain.all_files]),
        outputs = [ctx.outputs.object, ctx.outputs.archive],
        command = ('"$1" -r -o "$2" --whole-archive "${@:5}" && rm -f "$4" && ' +
                   '"$3" rcsD "$4" "$2"'),
        arguments = [
            toolchain.ld_executable,
            ctx.outputs.object.path,
            toolchain.ar_executable,
            ctx.outputs.archive.path,
        ] + [a.path for a in archives],
        mnemonic = "LibraryObjects",
        progress_message = "Merging the objects of %s" % ctx.outputs.archive.short_path,
    )

    # What the targets ask of the link besides their objects (-ldnnl, -lz,
    # -fopenmp, Abseil), for a cc_binary that links the merged object.
    flags = [f for li in linker_inputs for f in li.user_link_flags]
    linker_input = cc_common.create_linker_input(
        owner = ctx.label,
        user_link_flags = depset(flags, order = "topological"),
    )
    return [
        DefaultInfo(files = depset([ctx.outputs.archive])),
        CcInfo(linking_context = cc_common.create_linking_context(linker_inputs = depset([linker_input]))),
    ]

# The objects of `deps` (position-independent) in one relocatable object and
# in an archive of that object; as CcInfo, only their link flags.
library_objects = rule(
    implementation = _library_objects_impl,
    attrs = {
        "deps": attr.label_list(providers = [CcInfo]),
        "object": attr.output(mandatory = True),
        "archive": attr.output(mandatory = True),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    },
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    fragments = ["cpp"],
)

def _relative_to(path, root):
    return path[len(root) + 1:] if root else path

def _public_headers_impl(ctx):
    root = ctx.label.workspace_root
    headers = [
        h
        for dep in ctx.attr.deps
        for h in dep[CcInfo].compilation_context.headers.to_list()
        if h.is_source and h.owner.workspace_root == root
    ]
    out = ctx.actions.declare_directory(ctx.attr.name)
    ctx.actions.run(
        executable = ctx.executable._stage,
        inputs = headers + [ctx.file.umbrella],
        outputs = [out],
        arguments = [out.path, root or ".", _relative_to(ctx.file.umbrella.path, root)] +
                    [_relative_to(h.path, root) for h in headers],
        mnemonic = "PublicHeaders",
        progress_message = "Staging the public headers of %s" % ctx.file.umbrella.short_path,
    )
    return [DefaultInfo(files = depset([out]))]

public_headers = rule(
    implementation = _public_headers_impl,
    attrs = {
        "umbrella": attr.label(allow_single_file = [".h"], mandatory = True),
        "deps": attr.label_list(providers = [CcInfo]),
        "_stage": attr.label(default = ":stage_headers.sh", executable = True, cfg = "exec", allow_single_file = True),
    },
)
