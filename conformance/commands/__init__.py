"""The subcommands of `attncheck`, one module each; conformance/cli.py builds the parser from them.

Every module has `add_parser(sub)`, which registers its name and sets `handler(args, argv)` as the
parser's default, or, for a tool with a parser of its own (explore, routes, threshold, prebuild),
a `forward(argv)` that cli.main calls with the arguments after the name. Heavy imports stay inside
handlers: importing the CLI imports no adapter, no FlashInfer. common.py holds what they share.
"""
