package serverlab.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.test.web.reactive.server.WebTestClient;
import serverlab.contract.Contract;
import serverlab.contract.ServerSettings;

/** The real server on a random port, driven over HTTP. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class WebfluxServerTest {

  private static final String CONTENT_TYPE = "text/plain; charset=utf-8";

  /** The contract bean that main() registers, from WORKDAY_CALENDAR as set by the build. */
  @TestConfiguration(proxyBeanMethods = false)
  static class FromEnvironment {
    @Bean
    Contract contract() throws ServerSettings.InvalidSettingException {
      return ServerSettings.fromEnvironment(WebfluxServer.DISPLAY_NAME).contract();
    }
  }

  @Autowired WebTestClient client;

  @LocalServerPort int port;

  @Test
  void workdayForAGivenTime() {
    client
        .get()
        .uri("/workday?at=2019-05-05T10:00")
        .exchange()
        .expectStatus()
        .isOk()
        .expectHeader()
        .valueEquals("Content-Type", CONTENT_TYPE)
        .expectHeader()
        .valueEquals("Content-Length", "10")
        .expectHeader()
        .exists("Date")
        .expectBody(String.class)
        .isEqualTo("2019-05-06");
  }

  @Test
  void helloAndKilobytes() {
    client
        .get()
        .uri("/")
        .exchange()
        .expectStatus()
        .isOk()
        .expectBody(String.class)
        .value(body ->
            assertThat(body)
                .matches(
                    "Hello World, from Spring Boot WebFlux! "
                        + "\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}\\.\\d{3}"));
    client
        .get()
        .uri("/?n=100")
        .exchange()
        .expectStatus()
        .isOk()
        .expectHeader()
        .contentLength(100_000)
        .expectBody(byte[].class)
        .value(body -> assertThat(body).hasSize(100_000).containsOnly((byte) 'X'));
  }

  @Test
  void headHasGetsHeadersAndNoBody() {
    for (String target : new String[] {"/", "/?n=10", "/workday"}) {
      long getLength =
          client
              .get()
              .uri(target)
              .exchange()
              .returnResult(byte[].class)
              .getResponseHeaders()
              .getContentLength();
      client
          .head()
          .uri(target)
          .exchange()
          .expectStatus()
          .isOk()
          .expectHeader()
          .valueEquals("Content-Type", CONTENT_TYPE)
          .expectHeader()
          .contentLength(getLength)
          .expectBody()
          .isEmpty();
    }
  }

  @Test
  void badInputIs400WithTheContractMessage() {
    client
        .get()
        .uri("/?n=101")
        .exchange()
        .expectStatus()
        .isBadRequest()
        .expectHeader()
        .valueEquals("Content-Type", CONTENT_TYPE)
        .expectBody(String.class)
        .isEqualTo("n must be an integer between 1 and 100");
    client
        .get()
        .uri("/workday?at=2019-02-30T10:00")
        .exchange()
        .expectStatus()
        .isBadRequest()
        .expectBody(String.class)
        .isEqualTo("at must be a local time formatted YYYY-MM-DDTHH:MM[:SS]");
  }

  @Test
  void otherMethodsAre405AndOtherPaths404() {
    client
        .post()
        .uri("/workday")
        .exchange()
        .expectStatus()
        .isEqualTo(405)
        .expectHeader()
        .valueEquals("Allow", "GET, HEAD");
    client.delete().uri("/").exchange().expectStatus().isEqualTo(405);
    client.get().uri("/workday/").exchange().expectStatus().isNotFound();
    client.get().uri("/index.html").exchange().expectStatus().isNotFound();
  }

  @Test
  void malformedEscapesReachTheContract() throws IOException {
    // java.net.URI (and so WebTestClient) refuses this target: send it as raw bytes.
    String response = rawGet("/?n=%ZZ");
    assertThat(response)
        .startsWith("HTTP/1.1 400 ")
        .contains("\r\nContent-Type: text/plain; charset=utf-8\r\n")
        .endsWith("\r\n\r\nn must be an integer between 1 and 100");
    assertThat(rawGet("/workday?at=%ZZ")).startsWith("HTTP/1.1 400 ").endsWith("[:SS]");
    assertThat(rawGet("/?n=5&x={%ZZ}")).startsWith("HTTP/1.1 200 ");
  }

  private String rawGet(String target) throws IOException {
    try (Socket socket = new Socket("127.0.0.1", port)) {
      OutputStream out = socket.getOutputStream();
      out.write(
          ("GET " + target + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
              .getBytes(StandardCharsets.ISO_8859_1));
      out.flush();
      InputStream in = socket.getInputStream();
      return new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
    }
  }
}
