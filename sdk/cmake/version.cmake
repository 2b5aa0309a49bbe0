# The project's version, one place for the whole build (CMakeLists.txt) and for the SDK
# built on its own (sdk/CMakeLists.txt): the SDK's package version is the host's.
set(EXACTLY_VERSION 0.1.0)
