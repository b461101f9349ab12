// Real gemini under the in-pod runner `episodic episode --` (see runner-suite.ts).
import { defineRunnerSuite } from './runner-suite.ts';

defineRunnerSuite('gemini', 2);
