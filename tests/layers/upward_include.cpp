// Compiled by the Layers tests only (not part of kite_tests): kv/ sits below engine/, so with
// kv's include path this include must fail to compile, and with every layer's it must work.
#include "engine/engine.h"
