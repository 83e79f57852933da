package serverlab.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class RequestTargetEscaperTest {

  @ParameterizedTest
  @ValueSource(strings = {"/", "/workday?at=2019-05-05T10%3A00", "/?n=%35&x=a+b", "/?n=1;2"})
  void wellFormedTargetsPassUntouched(String target) {
    assertThat(RequestTargetEscaper.escape(target)).isSameAs(target);
  }

  @ParameterizedTest
  @ValueSource(
      strings = {"/?n=%ZZ", "/?n=%", "/?n=1%2", "/?n=1|2", "/%ZZ", "/?x={\"a\"}", "/?n=\u00e9"})
  void refusedTargetsBecomeValidUris(String target) {
    String escaped = RequestTargetEscaper.escape(target);
    assertThat(escaped).isNotEqualTo(target);
    URI.create(escaped); // would throw if still refused
  }

  @ParameterizedTest
  @ValueSource(strings = {"/?n=%ZZ"})
  void aStrayPercentKeepsItsLiteralMeaning(String target) {
    assertThat(RequestTargetEscaper.escape(target)).isEqualTo("/?n=%25ZZ");
    assertThat(RequestTargetEscaper.escape("/?n=\u00e9")).isEqualTo("/?n=%E9");
  }
}
